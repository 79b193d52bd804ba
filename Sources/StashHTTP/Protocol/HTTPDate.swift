import Foundation

/// HTTP dates (RFC 9110 §5.6.7), parsed and formatted without `DateFormatter`.
///
/// A `DateFormatter` must be pinned to `en_US_POSIX` or it reads month names in the user's locale, it
/// is not `Sendable`, and it accepts more than the grammar allows; the three formats are fixed-width
/// enough that a small parser that checks every character is clearer and safe to call from any thread.
///
/// Seconds and days since 1970 are counted in `Int64`: seconds pass 2^31 on 2038-01-19, which a 32-bit
/// `Int` (Apple Watch's arm64_32) cannot hold.
enum HTTPDate {
    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"] // 1970-01-01 was a Thursday

    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let dayNames: Set<String> = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
    private static let longDayNames: Set<String> = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

    /// Parses the three forms RFC 9110 §5.6.7 defines, exactly as its grammar spells them, and nothing else:
    /// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
    /// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`).
    ///
    /// Names are case-sensitive, spaces single (asctime pads a one-digit day with a second one), the
    /// zone is `GMT` only and IMF-fixdate has a four-digit year. Anything else (`UTC`, a missing comma,
    /// dashes in IMF-fixdate, a one-digit hour, doubled spaces) is nil, which for `Expires` means
    /// "already expired" (RFC 9111 §5.3). Surrounding whitespace is ignored.
    /// - Parameters:
    ///   - text: The field value.
    ///   - reference: The moment a two-digit RFC 850 year is read against: a year that would be more
    ///     than 50 years after it is in the previous century (RFC 9110 §5.6.7). nil reads 70–99 as
    ///     19xx and 00–69 as 20xx.
    /// - Returns: The instant, or nil when the text is not an HTTP date.
    static func parse(_ text: String, relativeTo reference: Date? = nil) -> Date? {
        let text = text.trimmingCharacters(in: .whitespaces)
        let characters = Array(text.utf8)
        if characters.count == 29 { return parseIMFFixdate(characters) }
        if characters.count == 24, characters[3] == UInt8(ascii: " ") { return parseAsctime(characters) }
        return parseRFC850(text, reference: reference)
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func parseIMFFixdate(_ c: [UInt8]) -> Date? {
        guard dayNames.contains(string(c, 0..<3)), c[3] == UInt8(ascii: ","), c[4] == space, c[7] == space,
              c[11] == space, c[16] == space, c[25] == space, string(c, 26..<29) == "GMT",
              let day = number(c, 5..<7), let month = month(c, 8..<11), let year = number(c, 12..<16),
              let time = time(c, 17..<25) else { return nil }
        return makeDate(year: year, month: month, day: day, time: time)
    }

    /// `Sun Nov  6 08:49:37 1994` (a one-digit day is padded with a space) or `Sun Nov 06 08:49:37 1994`.
    private static func parseAsctime(_ c: [UInt8]) -> Date? {
        guard dayNames.contains(string(c, 0..<3)), c[3] == space, c[7] == space, c[10] == space, c[19] == space,
              let month = month(c, 4..<7), let time = time(c, 11..<19), let year = number(c, 20..<24) else { return nil }
        let day: Int?
        if c[8] == space { day = number(c, 9..<10) } else { day = number(c, 8..<10) }
        guard let day else { return nil }
        return makeDate(year: year, month: month, day: day, time: time)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`
    private static func parseRFC850(_ text: String, reference: Date?) -> Date? {
        guard let comma = text.firstIndex(of: ","), longDayNames.contains(String(text[..<comma])) else { return nil }
        let c = Array(text[text.index(after: comma)...].utf8) // " 06-Nov-94 08:49:37 GMT"
        guard c.count == 23, c[0] == space, c[3] == UInt8(ascii: "-"), c[7] == UInt8(ascii: "-"), c[10] == space,
              c[19] == space, string(c, 20..<23) == "GMT", let day = number(c, 1..<3), let month = month(c, 4..<7),
              let twoDigitYear = number(c, 8..<10), let time = time(c, 11..<19) else { return nil }
        return makeDate(year: fullYear(twoDigitYear, reference: reference), month: month, day: day, time: time)
    }

    /// RFC 9110 §5.6.7: a two-digit year that appears more than 50 years in the future is in the past century.
    private static func fullYear(_ twoDigits: Int, reference: Date?) -> Int {
        guard let reference else { return twoDigits + (twoDigits < 70 ? 2000 : 1900) }
        let referenceYear = Int(civilDate(daysSinceEpoch: wholeDays(reference)).year)
        var year = referenceYear - referenceYear % 100 + twoDigits
        if year > referenceYear + 50 { year -= 100 }
        return year
    }

    private static let space = UInt8(ascii: " ")

    private static func string(_ c: [UInt8], _ range: Range<Int>) -> String { String(decoding: c[range], as: UTF8.self) }

    /// Digits only (no sign, no space), exactly as many as the range is long.
    private static func number(_ c: [UInt8], _ range: Range<Int>) -> Int? {
        var value = 0
        for byte in c[range] {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static func month(_ c: [UInt8], _ range: Range<Int>) -> Int? {
        monthNames.firstIndex(of: string(c, range)).map { $0 + 1 }
    }

    /// `HH:MM:SS`, two digits each.
    private static func time(_ c: [UInt8], _ range: Range<Int>) -> (Int, Int, Int)? {
        let start = range.lowerBound
        guard range.count == 8, c[start + 2] == UInt8(ascii: ":"), c[start + 5] == UInt8(ascii: ":"),
              let hour = number(c, start..<start + 2), let minute = number(c, start + 3..<start + 5),
              let second = number(c, start + 6..<start + 8) else { return nil }
        return (hour, minute, second)
    }

    private static func makeDate(year: Int, month: Int, day: Int, time: (Int, Int, Int)) -> Date? {
        guard (1...daysIn(month: month, year: year)).contains(day), (0...23).contains(time.0), (0...59).contains(time.1),
              (0...60).contains(time.2) else { return nil }
        let days = daysSinceEpoch(year: Int64(year), month: Int64(month), day: Int64(day))
        return Date(timeIntervalSince1970: TimeInterval(days * 86_400 + Int64(time.0 * 3600 + time.1 * 60 + time.2)))
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Formats `date` as IMF-fixdate, the form HTTP senders must use. Its year has four digits, so
    /// a date outside years 1–9999 (`.distantPast`, `.distantFuture`, NaN) is written as the nearest end.
    static func string(from date: Date) -> String {
        let seconds = clampedSeconds(date)
        let days = floorDivide(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        let weekday = weekdays[Int(((days % 7) + 7) % 7)]
        let monthName = monthNames[Int(month) - 1]
        let fourDigitYear = String(repeating: "0", count: max(0, 4 - String(year).count)) + String(year)
        return "\(weekday), \(twoDigits(day)) \(monthName) \(fourDigitYear) "
            + "\(twoDigits(secondOfDay / 3600)):\(twoDigits(secondOfDay % 3600 / 60)):\(twoDigits(secondOfDay % 60)) GMT"
    }

    /// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, in seconds since 1970: the dates IMF-fixdate can spell.
    static let formattableSeconds: ClosedRange<Int64> = -62_135_596_800...253_402_300_799

    /// Whole seconds since 1970 (rounded down), clamped to ``formattableSeconds``; NaN is the lower end.
    private static func clampedSeconds(_ date: Date) -> Int64 {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds >= TimeInterval(formattableSeconds.lowerBound) else { return formattableSeconds.lowerBound }
        guard seconds <= TimeInterval(formattableSeconds.upperBound) else { return formattableSeconds.upperBound }
        return Int64(seconds)
    }

    /// Whole days since 1970 of `date` (rounded down), within the formattable years.
    private static func wholeDays(_ date: Date) -> Int64 { floorDivide(clampedSeconds(date), 86_400) }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> Int64 {
        value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
    }

    private static func twoDigits(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }

    // Howard Hinnant's days-from-civil and civil-from-days: exact for the proleptic Gregorian calendar.
    private static func daysSinceEpoch(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilDate(daysSinceEpoch days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
