//! A server's `Retry-After` (RFC 9110 10.2.3): how long to wait before asking again, given as
//! seconds or as an HTTP-date (IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`, and the two
//! obsolete forms a recipient must read: RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT` and C's
//! asctime `Sun Nov  6 08:49:37 1994`). A date in the past means now.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// The wait a `Retry-After` value asks for, seen at `now`; `None` when it is neither form.
pub fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = http_date(value)?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The moment an HTTP-date names.
pub fn http_date(value: &str) -> Option<SystemTime> {
    let words: Vec<&str> = value.split_whitespace().collect();
    let (day, month, year, time) = match words.as_slice() {
        // IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
        [weekday, day, month, year, time, "GMT"] if weekday.ends_with(',') => {
            (day.parse().ok()?, *month, year.parse().ok()?, *time)
        }
        // RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT` (a two-digit year: 1970 to 2069).
        [weekday, date, time, "GMT"] if weekday.ends_with(',') => {
            let mut parts = date.split('-');
            let (day, month, yy) = (parts.next()?, parts.next()?, parts.next()?);
            if parts.next().is_some() || yy.len() != 2 {
                return None;
            }
            let yy: i64 = yy.parse().ok()?;
            (day.parse().ok()?, month, if yy < 70 { 2000 + yy } else { 1900 + yy }, *time)
        }
        // asctime: `Sun Nov  6 08:49:37 1994`.
        [_weekday, month, day, time, year] => (day.parse().ok()?, *month, year.parse().ok()?, *time),
        _ => return None,
    };
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let mut hms = time.split(':').map(|p| if p.len() == 2 { p.parse::<i64>().ok() } else { None });
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some() || h > 23 || m > 59 || s > 60 || !(1..=31).contains(&day) || !(1970..=9999).contains(&year) {
        return None;
    }
    let seconds = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s;
    UNIX_EPOCH.checked_add(Duration::from_secs(u64::try_from(seconds).ok()?))
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1994-11-06 08:49:37 UTC, the RFC's example.
    const EXAMPLE: u64 = 784_111_777;

    #[test]
    fn the_three_date_forms_and_seconds_are_read() {
        let at = UNIX_EPOCH + Duration::from_secs(EXAMPLE);
        for form in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            assert_eq!(http_date(form), Some(at), "{form}");
        }
        let before = at - Duration::from_secs(7);
        assert_eq!(retry_after("Sun, 06 Nov 1994 08:49:37 GMT", before), Some(Duration::from_secs(7)));
        assert_eq!(retry_after("Sun, 06 Nov 1994 08:49:37 GMT", at + Duration::from_secs(9)), Some(Duration::ZERO));
        assert_eq!(retry_after(" 120 ", at), Some(Duration::from_secs(120)));
        assert_eq!(http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(UNIX_EPOCH));
        assert_eq!(http_date("Tue, 29 Feb 2028 23:59:59 GMT"), Some(UNIX_EPOCH + Duration::from_secs(1_835_481_599)));
        for bad in [
            "",
            "-5",
            "1.5",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 32 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nvm 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1969 08:49:37 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37:00 GMT",
        ] {
            assert_eq!(retry_after(bad, at), None, "{bad:?}");
        }
    }
}
