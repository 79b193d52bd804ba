import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import StashHTTP

/// On Apple platforms the protocol's client calls are scheduled on the run loop of `startLoading`: in
/// the default mode and in the mode that loop ran in then, so a delivery cannot stall while the
/// thread runs in the other one. (Linux calls the client directly; the choice of modes is checked here.)
@Suite("URLProtocol run-loop modes")
struct URLProtocolRunLoopModeTests {
    @Test("outside a run loop, or in the default mode, the default mode alone")
    func defaultModeOnly() {
        #expect(HTTPCacheURLProtocol.deliveryModes(current: nil) == [.default])
        #expect(HTTPCacheURLProtocol.deliveryModes(current: .default) == [.default])
    }

    @Test("in another mode (a modal panel, tracking a scroll), the default mode plus that one")
    func defaultPlusCurrentMode() {
        let tracking = RunLoop.Mode("UITrackingRunLoopMode")
        #expect(HTTPCacheURLProtocol.deliveryModes(current: tracking) == [.default, tracking])
        #expect(HTTPCacheURLProtocol.deliveryModes(current: .common) == [.default, .common])
    }
}
