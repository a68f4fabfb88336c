//! Timestamps in the API: RFC 3339 in UTC out, RFC 3339 or Unix seconds in.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jiff::Timestamp;

/// `2026-11-22T06:02:36.123456789Z` for nanoseconds since the Unix epoch
/// (fractional digits only as many as needed).
pub fn rfc3339_nanos(nanos: u64) -> String {
    // Every u64 of nanoseconds (up to year 2554) is a valid timestamp.
    Timestamp::from_nanosecond(i128::from(nanos))
        .unwrap_or(Timestamp::UNIX_EPOCH)
        .to_string()
}

pub fn rfc3339(t: SystemTime) -> String {
    rfc3339_nanos(
        t.duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)),
    )
}

/// Parses Unix seconds (`1732250000`, `1732250000.5`) or an RFC 3339
/// timestamp with an offset (`2026-11-22T06:02:36Z`, `…+02:00`); `None`
/// for anything else, an impossible date (`2026-02-31`) included.
pub fn parse_since(s: &str) -> Option<SystemTime> {
    if let Ok(secs) = s.parse::<f64>() {
        // try_from: a number of seconds past what a Duration holds (1e20)
        // is refused, not a panic.
        return Duration::try_from_secs_f64(secs)
            .ok()
            .and_then(|d| UNIX_EPOCH.checked_add(d));
    }
    let t = s.parse::<Timestamp>().ok()?;
    SystemTime::try_from(t).ok()
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
        assert_eq!(rfc3339_nanos(u64::MAX), "2554-07-21T23:34:33.709551615Z");
        let t = parse_since("2025-11-22T08:26:40.123Z").unwrap();
        assert_eq!(rfc3339(t), "2025-11-22T08:26:40.123Z");
        assert_eq!(
            parse_since("1763800000"),
            parse_since("2025-11-22T08:26:40Z")
        );
        // RFC 3339 allows lowercase `t` and `z`, and other offsets.
        assert_eq!(
            parse_since("2025-11-22t08:26:40z"),
            parse_since("2025-11-22T10:26:40+02:00")
        );
        assert!(parse_since("yesterday").is_none());
        assert!(parse_since("2025-13-01T00:00:00Z").is_none());
        assert!(parse_since("2026-02-31T00:00:00Z").is_none());
        // No offset: ambiguous, refused.
        assert!(parse_since("2025-11-22T08:26:40").is_none());
    }

    #[test]
    fn since_out_of_range_is_refused_not_a_panic() {
        for s in ["1e20", "1.8e19", "-1", "NaN", "inf", "-0.5"] {
            assert!(parse_since(s).is_none(), "{s}");
        }
        assert!(parse_since("0").is_some());
        assert!(parse_since("9223372036854775807-01-01T00:00:00Z").is_none());
        assert!(parse_since("10000-01-01T00:00:00Z").is_none());
        assert!(parse_since("9999-12-30T00:00:00Z").is_some());
    }
}
