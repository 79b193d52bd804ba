import Testing
@testable import StashHTTP
