import Foundation

/// HTTP dates (RFC 9110 §5.6.7), parsed and formatted without `DateFormatter`.
///
/// A `DateFormatter` must be pinned to `en_US_POSIX` or it reads month names in the user's locale, and
/// it is not `Sendable`; the three formats are fixed enough that a small parser is clearer and safe
/// to call from any thread.
enum HTTPDate {
    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"] // 1970-01-01 was a Thursday

    /// Parses IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form
    /// (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime (`Sun Nov  6 08:49:37 1994`); nil for anything else.
    static func parse(_ text: String) -> Date? {
        let tokens = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "-" }).map(String.init)
        var month: Int?
        var numbers: [Int] = []
        var time: (Int, Int, Int)?
        var zoneIsGMT = true
        for token in tokens {
            if token.contains(":") {
                let parts = token.split(separator: ":").compactMap { Int($0) }
                guard parts.count == 3 else { return nil }
                time = (parts[0], parts[1], parts[2])
            } else if let number = Int(token) {
                numbers.append(number)
            } else if let index = months.firstIndex(of: token.lowercased()) {
                month = index + 1
            } else if token.uppercased() == "GMT" || token.uppercased() == "UTC" {
                zoneIsGMT = true
            } else if token.count <= 3, token.uppercased() != token.lowercased(), month == nil, numbers.isEmpty {
                continue // the weekday name, which carries no information
            } else if token.count > 3, numbers.isEmpty, month == nil {
                continue // the long weekday name of the RFC 850 form
            } else {
                zoneIsGMT = false
            }
        }
        guard zoneIsGMT, let month, let time, numbers.count == 2 else { return nil }
        let day = numbers[0]
        var year = numbers[1]
        // RFC 9110: a two-digit year more than 50 years in the future is in the past century.
        if year < 100 { year += year < 70 ? 2000 : 1900 }
        guard (1...31).contains(day), (0...23).contains(time.0), (0...59).contains(time.1), (0...60).contains(time.2)
        else { return nil }
        let days = daysSinceEpoch(year: year, month: month, day: day)
        let seconds = days * 86_400 + time.0 * 3600 + time.1 * 60 + time.2
        return Date(timeIntervalSince1970: TimeInterval(seconds))
    }

    /// Formats `date` as IMF-fixdate, the form HTTP senders must use.
    static func string(from date: Date) -> String {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = Int((Double(seconds) / 86_400).rounded(.down))
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civilDate(daysSinceEpoch: days)
        let weekday = weekdays[((days % 7) + 7) % 7]
        let monthName = months[month - 1].capitalized
        return "\(weekday), \(twoDigits(day)) \(monthName) \(year) "
            + "\(twoDigits(secondOfDay / 3600)):\(twoDigits(secondOfDay % 3600 / 60)):\(twoDigits(secondOfDay % 60)) GMT"
    }

    private static func twoDigits(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }

    // Howard Hinnant's days-from-civil and civil-from-days: exact for the proleptic Gregorian calendar.
    private static func daysSinceEpoch(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    private static func civilDate(daysSinceEpoch days: Int) -> (year: Int, month: Int, day: Int) {
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
