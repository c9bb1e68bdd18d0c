//! Access-log timestamps → Unix seconds (UTC), and Unix seconds → RFC 3339.
//!
//! Written by hand rather than with humantime, which the proxy uses for its own timestamps:
//! access logs carry local offsets (`-0700`, `+01:00`) that `humantime::parse_rfc3339` refuses
//! ("only UTC is supported"), and a log line may hold a time before 1970, which humantime's
//! formatter panics on (`expect("all times should be after the epoch")`, humantime 2 `date.rs`).
//! A log is input: it gets an answer for every line, never a panic. The formats are fixed and
//! only whole seconds in UTC are needed.

/// Month abbreviations as the common log format writes them.
const MONTHS: [&[u8; 3]; 12] = [
    b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov", b"Dec",
];

/// Parses any timestamp an access log may carry: the common log format's
/// `10/Oct/2000:13:55:36 -0700` (with or without its brackets), RFC 3339
/// (`2000-10-10T20:55:36Z`, `2000-10-10 20:55:36.5+02:00`), or a number of seconds since the
/// epoch (milliseconds when it is too large to be seconds).
pub fn parse(text: &[u8]) -> Option<i64> {
    let text = text.trim_ascii();
    let text = text
        .strip_prefix(b"[")
        .and_then(|t| t.strip_suffix(b"]"))
        .unwrap_or(text);
    match text.get(2) {
        Some(b'/') => parse_clf(text),
        _ if text.get(4) == Some(&b'-') => parse_rfc3339(text),
        _ => parse_epoch(text),
    }
}

/// `dd/Mon/yyyy:HH:MM:SS ±hhmm`, the common log format's `%t` without brackets.
pub fn parse_clf(t: &[u8]) -> Option<i64> {
    if t.len() != 26 || t[2] != b'/' || t[6] != b'/' || t[11] != b':' || t[20] != b' ' {
        return None;
    }
    let day = digits(&t[0..2])?;
    let month = MONTHS.iter().position(|m| m[..] == t[3..6])? as i64 + 1;
    let year = digits(&t[7..11])?;
    let local = seconds_of(year, month, day, &t[12..20])?;
    let offset = offset_seconds(t[21], &t[22..24], &t[24..26])?;
    Some(local - offset)
}

/// RFC 3339: `yyyy-mm-ddTHH:MM:SS[.frac](Z|±hh:mm)`; a space may stand for `T`, and the
/// offset may be written `±hhmm` (as nginx's `$time_iso8601` does not, but some tools do).
pub fn parse_rfc3339(t: &[u8]) -> Option<i64> {
    if t.len() < 20 || t[4] != b'-' || t[7] != b'-' || !matches!(t[10], b'T' | b't' | b' ') {
        return None;
    }
    let year = digits(&t[0..4])?;
    let month = digits(&t[5..7])?;
    let day = digits(&t[8..10])?;
    let local = seconds_of(year, month, day, &t[11..19])?;
    let mut rest = &t[19..];
    if let Some(fraction) = rest.strip_prefix(b".") {
        let end = fraction
            .iter()
            .position(|b| !b.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return None;
        }
        rest = &fraction[end..];
    }
    let offset = match rest {
        b"Z" | b"z" => 0,
        [sign, h1, h2, b':', m1, m2] | [sign, h1, h2, m1, m2] => {
            offset_seconds(*sign, &[*h1, *h2], &[*m1, *m2])?
        }
        _ => return None,
    };
    Some(local - offset)
}

/// Seconds (or milliseconds) since the epoch, possibly with a fraction.
fn parse_epoch(t: &[u8]) -> Option<i64> {
    let text = std::str::from_utf8(t).ok()?;
    let value: f64 = text.parse().ok()?;
    from_number(value)
}

/// A JSON number as a timestamp: seconds since the epoch, or milliseconds when it is too large
/// to be seconds (after the year 5138).
pub fn from_number(value: f64) -> Option<i64> {
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    let seconds = if value >= 1e11 { value / 1000.0 } else { value };
    // Truncation is what is wanted: whole seconds. The range check keeps the cast exact.
    (seconds < 1e12).then_some(seconds as i64)
}

/// The Unix time of a local date and `HH:MM:SS`, validating every field.
fn seconds_of(year: i64, month: i64, day: i64, hms: &[u8]) -> Option<i64> {
    if hms.len() != 8 || hms[2] != b':' || hms[5] != b':' {
        return None;
    }
    let (hour, minute, second) = (
        digits(&hms[0..2])?,
        digits(&hms[3..5])?,
        digits(&hms[6..8])?,
    );
    // A leap second (60) is read as the next second, as most log readers do.
    let valid = (1..=12).contains(&month)
        && day >= 1
        && day <= days_in_month(year, month)
        && hour < 24
        && minute < 60
        && second <= 60;
    valid.then(|| days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
}

/// `+hhmm` → seconds east of UTC.
fn offset_seconds(sign: u8, hours: &[u8], minutes: &[u8]) -> Option<i64> {
    let (hours, minutes) = (digits(hours)?, digits(minutes)?);
    if hours > 23 || minutes > 59 {
        return None;
    }
    let seconds = hours * 3600 + minutes * 60;
    match sign {
        b'+' => Some(seconds),
        b'-' => Some(-seconds),
        _ => None,
    }
}

fn digits(bytes: &[u8]) -> Option<i64> {
    bytes.iter().try_fold(0i64, |value, &b| {
        b.is_ascii_digit().then(|| value * 10 + i64::from(b - b'0'))
    })
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_index = (month + 9) % 12;
    let day_of_year = (153 * month_index + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The date of a number of days since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Unix seconds as RFC 3339 in UTC: `2000-10-10T20:55:36Z`.
pub fn format_rfc3339(seconds: i64) -> String {
    let (year, month, day) = civil_from_days(seconds.div_euclid(86_400));
    let second_of_day = seconds.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        second_of_day % 3600 / 60,
        second_of_day % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_log_format_times_are_read_into_utc() {
        let t = parse(b"[10/Oct/2000:13:55:36 -0700]").unwrap();
        assert_eq!(format_rfc3339(t), "2000-10-10T20:55:36Z");
        assert_eq!(t, 971_211_336);
        let t = parse(b"01/Jan/2024:00:30:00 +0100").unwrap();
        assert_eq!(format_rfc3339(t), "2023-12-31T23:30:00Z");
        assert_eq!(parse(b"29/Feb/2024:00:00:00 +0000"), Some(1_709_164_800));
    }

    #[test]
    fn rfc3339_times_are_read_into_utc() {
        assert_eq!(parse(b"2000-10-10T20:55:36Z"), Some(971_211_336));
        assert_eq!(
            parse(b"2000-10-10t13:55:36.123456-07:00"),
            Some(971_211_336)
        );
        assert_eq!(parse(b"2000-10-10 22:55:36+0200"), Some(971_211_336));
        assert_eq!(parse(b"1969-12-31T23:59:59Z"), Some(-1));
    }

    #[test]
    fn epoch_numbers_are_seconds_or_milliseconds() {
        assert_eq!(parse(b"971211336"), Some(971_211_336));
        assert_eq!(parse(b"971211336.75"), Some(971_211_336));
        assert_eq!(parse(b"971211336750"), Some(971_211_336));
        assert_eq!(from_number(-1.0), None);
        assert_eq!(from_number(f64::NAN), None);
    }

    #[test]
    fn impossible_times_are_refused() {
        for bad in [
            &b"31/Feb/2024:00:00:00 +0000"[..],
            b"10/Foo/2000:13:55:36 -0700",
            b"10/Oct/2000:24:00:00 -0700",
            b"10/Oct/2000:13:55:36 *0700",
            b"10/Oct/2000:13:55:36",
            b"2000-13-10T20:55:36Z",
            b"2000-10-10T20:55:36",
            b"2000-10-10T20:55:36.Z",
            b"2000-10-10T20:55:36+25:00",
            b"",
            b"yesterday",
            b"[]",
        ] {
            assert_eq!(parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn formatting_round_trips_over_centuries() {
        for seconds in [
            0,
            -86_400,
            951_782_400,
            4_102_444_799,
            253_402_300_799,
            -62_135_596_800,
        ] {
            let text = format_rfc3339(seconds);
            assert_eq!(parse(text.as_bytes()), Some(seconds), "{text}");
        }
        assert_eq!(format_rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }
}
