//! RFC 3339 timestamps without a date-time dependency.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// `2026-11-22T06:02:36.123456789Z` for nanoseconds since the Unix epoch.
pub fn rfc3339_nanos(nanos: u64) -> String {
    let secs = nanos / 1_000_000_000;
    let frac = nanos % 1_000_000_000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    let base = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    );
    if frac == 0 {
        format!("{base}Z")
    } else {
        let f = format!("{frac:09}");
        format!("{base}.{}Z", f.trim_end_matches('0'))
    }
}

pub fn rfc3339(t: SystemTime) -> String {
    rfc3339_nanos(
        t.duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    )
}

/// Howard Hinnant's days → (year, month, day) in the proleptic Gregorian calendar.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Parses unix seconds (`1732250000`, `1732250000.5`) or RFC 3339 in UTC
/// (`2026-11-22T06:02:36Z`, fractional seconds allowed).
pub fn parse_since(s: &str) -> Option<SystemTime> {
    if let Ok(secs) = s.parse::<f64>() {
        // try_from: a number of seconds past what a Duration holds (1e20)
        // is refused, not a panic.
        return Duration::try_from_secs_f64(secs)
            .ok()
            .and_then(|d| UNIX_EPOCH.checked_add(d));
    }
    let s = s.strip_suffix('Z').or_else(|| s.strip_suffix("+00:00"))?;
    let (date, time) = s.split_once('T')?;
    let mut dp = date.split('-');
    let y: i64 = dp.next()?.parse().ok()?;
    let m: u32 = dp.next()?.parse().ok()?;
    let d: u32 = dp.next()?.parse().ok()?;
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut tp = hms.split(':');
    let (hh, mm, ss): (u64, u64, u64) = (
        tp.next()?.parse().ok()?,
        tp.next()?.parse().ok()?,
        tp.next()?.parse().ok()?,
    );
    if !(1..=12).contains(&m)
        || !(1..=31).contains(&d)
        || hh > 23
        || mm > 59
        || ss > 60
        || !(1970..=9999).contains(&y)
    {
        return None;
    }
    let nanos: u64 = if frac.is_empty() {
        0
    } else {
        let digits: String = frac.chars().take(9).collect();
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        format!("{digits:0<9}").parse().ok()?
    };
    let days = u64::try_from(days_from_civil(y, m, d)).ok()?;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    UNIX_EPOCH.checked_add(Duration::from_secs(secs) + Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_parses_rfc3339() {
        assert_eq!(rfc3339_nanos(0), "1970-01-01T00:00:00Z");
        assert_eq!(
            rfc3339_nanos(1_763_800_000_123_000_000),
            "2025-11-22T08:26:40.123Z"
        );
        assert_eq!(
            rfc3339_nanos(951_782_400_000_000_000),
            "2000-02-29T00:00:00Z"
        );
        let t = parse_since("2025-11-22T08:26:40.123Z").unwrap();
        assert_eq!(rfc3339(t), "2025-11-22T08:26:40.123Z");
        assert_eq!(
            parse_since("1763800000"),
            parse_since("2025-11-22T08:26:40Z")
        );
        assert!(parse_since("yesterday").is_none());
        assert!(parse_since("2025-13-01T00:00:00Z").is_none());
    }

    #[test]
    fn since_out_of_range_is_refused_not_a_panic() {
        for s in ["1e20", "1.8e19", "-1", "NaN", "inf", "-0.5"] {
            assert!(parse_since(s).is_none(), "{s}");
        }
        assert!(parse_since("0").is_some());
        // A year past what the day arithmetic holds (found by fuzzing).
        assert!(parse_since("9223372036854775807-01-01T00:00:00Z").is_none());
        assert!(parse_since("10000-01-01T00:00:00Z").is_none());
        assert!(parse_since("9999-12-31T23:59:59Z").is_some());
    }
}
