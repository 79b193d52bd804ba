import Foundation

/// How fresh a stored response is at a given moment (RFC 9111 §4.2).
struct Freshness: Sendable, Equatable {
    /// How long the response stays fresh after it was generated (§4.2.1).
    var lifetime: TimeInterval
    /// The response's age now: the time since the origin generated it (§4.2.3 `current_age`).
    var currentAge: TimeInterval

    /// Fresh while the lifetime exceeds the age (§4.2).
    var isFresh: Bool { lifetime > currentAge }
    /// How long ago the response became stale; 0 while fresh.
    var staleness: TimeInterval { max(0, currentAge - lifetime) }
    /// How much longer the response stays fresh; negative once stale.
    var remainingLifetime: TimeInterval { lifetime - currentAge }

    /// The freshness of `stored` at `now`.
    /// - Parameters:
    ///   - stored: The stored response.
    ///   - now: The current time.
    ///   - heuristics: How to guess a lifetime when the server gave none.
    ///   - lifetimeOverride: A lifetime that replaces the server's (per-request time to live).
    init(of stored: StoredResponse, at now: Date, heuristics: HeuristicFreshness, lifetimeOverride: TimeInterval? = nil) {
        lifetime = lifetimeOverride ?? stored.freshnessLifetimeOverride ?? Self.lifetime(of: stored, heuristics: heuristics)
        currentAge = Self.currentAge(of: stored, at: now)
    }

    init(lifetime: TimeInterval, currentAge: TimeInterval) {
        self.lifetime = lifetime
        self.currentAge = currentAge
    }

    /// §4.2.1: `max-age`, else `Expires` minus `Date`, else a heuristic (§4.2.2). `s-maxage` is for
    /// shared caches and ignored here.
    static func lifetime(of stored: StoredResponse, heuristics: HeuristicFreshness) -> TimeInterval {
        let cacheControl = stored.cacheControl
        if let maxAge = cacheControl.maxAge { return maxAge }
        let dateValue = dateValue(of: stored)
        if let expires = stored.headers["expires"] {
            // §5.3: an invalid Expires (such as "0") means already expired.
            guard let expiresDate = HTTPDate.parse(expires, relativeTo: stored.responseTime) else { return 0 }
            return max(0, expiresDate.timeIntervalSince(dateValue))
        }
        return heuristicLifetime(of: stored, dateValue: dateValue, heuristics: heuristics)
    }

    /// §4.2.2: a fraction of the time since `Last-Modified`, capped, only for heuristically
    /// cacheable statuses (or `public` responses), and by default not for URLs with a query.
    static func heuristicLifetime(of stored: StoredResponse, dateValue: Date, heuristics: HeuristicFreshness) -> TimeInterval {
        guard heuristics.fraction > 0,
              StoringRules.heuristicallyCacheableStatuses.contains(stored.statusCode) || stored.cacheControl.has("public"),
              let lastModified = stored.headers["last-modified"].flatMap({ HTTPDate.parse($0, relativeTo: stored.responseTime) })
        else { return 0 }
        if !heuristics.appliesToURLsWithQuery, let query = stored.url.query, !query.isEmpty { return 0 }
        let sinceModified = dateValue.timeIntervalSince(lastModified)
        guard sinceModified > 0 else { return 0 }
        return min(sinceModified * heuristics.fraction, heuristics.maximumLifetime)
    }

    /// §4.2.3: the age the response had on arrival (corrected for the request's round trip and for
    /// an `Age` from caches on the way) plus the time it has spent here.
    static func currentAge(of stored: StoredResponse, at now: Date) -> TimeInterval {
        let ageValue = ageValue(stored.headers)
        let dateValue = dateValue(of: stored)
        let apparentAge = max(0, stored.responseTime.timeIntervalSince(dateValue))
        let responseDelay = max(0, stored.responseTime.timeIntervalSince(stored.requestTime))
        let correctedAgeValue = ageValue + responseDelay
        let correctedInitialAge = max(apparentAge, correctedAgeValue)
        let residentTime = max(0, now.timeIntervalSince(stored.responseTime))
        return correctedInitialAge + residentTime
    }

    /// The `Date` field, or the time the response arrived when it has none or an invalid one (§4.2.3).
    static func dateValue(of stored: StoredResponse) -> Date {
        stored.headers["date"].flatMap { HTTPDate.parse($0, relativeTo: stored.responseTime) } ?? stored.responseTime
    }

    /// §5.1: the `Age` field in seconds. A list (`7200, 0`, also two field lines joined) counts by its first
    /// member; a member that is not a non-negative integer makes the field ignored (0). Values past
    /// 2^31 are capped there, as §1.2.2 asks.
    static func ageValue(_ headers: HTTPHeaders) -> TimeInterval {
        guard let first = headers.listMembers("age").first, let value = DeltaSeconds.parse(first) else { return 0 }
        return TimeInterval(value)
    }

    /// The `Age` field a cache sends with what it serves from the store (§5.1): the current age in
    /// whole seconds, capped at 2^31.
    static func ageField(_ currentAge: TimeInterval) -> String {
        DeltaSeconds.format(currentAge)
    }
}
