//! The on-disk format, as pure functions over bytes.
//!
//! A segment is a 16-byte header (`TSWAL001`, the format version as u32 LE,
//! four zero bytes) followed by records. A record is `len: u32 LE`,
//! `crc32(body): u32 LE`, then a body of `len` bytes: `kind: u8`,
//! `arrived_unix_nanos: u64 LE`, and the payload. Every length and checksum
//! is checked on read, so a torn or damaged tail is found, never decoded.

/// The first eight bytes of every segment.
pub const MAGIC: [u8; 8] = *b"TSWAL001";
/// The format this build writes, and the newest it reads.
pub const VERSION: u32 = 1;
pub const HEADER_LEN: usize = 16;
/// `len` and `crc32`, before the body.
pub const RECORD_PREFIX_LEN: usize = 8;
/// `kind` and `arrived_unix_nanos`, before the payload.
pub const BODY_FIXED_LEN: usize = 9;
/// The largest payload a record can hold: its body's length must fit in a u32.
pub const MAX_PAYLOAD: usize = u32::MAX as usize - BODY_FIXED_LEN;

/// What a record's payload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Kind {
    /// An OTLP `ExportTraceServiceRequest`, protobuf-encoded.
    OtlpProtobuf = 1,
    /// The same request as OTLP/JSON.
    OtlpJson = 2,
    /// An OTLP `ExportLogsServiceRequest`, protobuf-encoded.
    OtlpLogsProtobuf = 3,
    /// The same request as OTLP/JSON.
    OtlpLogsJson = 4,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::OtlpProtobuf,
        Kind::OtlpJson,
        Kind::OtlpLogsProtobuf,
        Kind::OtlpLogsJson,
    ];

    /// Whether the payload is OTLP/JSON (else protobuf).
    pub fn is_json(self) -> bool {
        matches!(self, Kind::OtlpJson | Kind::OtlpLogsJson)
    }

    /// Whether the payload is a logs request (else traces).
    pub fn is_logs(self) -> bool {
        matches!(self, Kind::OtlpLogsProtobuf | Kind::OtlpLogsJson)
    }

    /// The same encoding, for logs.
    pub fn logs(self) -> Kind {
        if self.is_json() {
            Kind::OtlpLogsJson
        } else {
            Kind::OtlpLogsProtobuf
        }
    }

    pub fn from_byte(b: u8) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| *k as u8 == b)
    }
}

pub fn encode_header() -> [u8; HEADER_LEN] {
    let mut h = [0u8; HEADER_LEN];
    h[..8].copy_from_slice(&MAGIC);
    h[8..12].copy_from_slice(&VERSION.to_le_bytes());
    h
}

/// What a segment's first bytes say about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// A header this build reads.
    Valid,
    /// Shorter than a header, but what is there is the start of one: the
    /// file was being created when the process stopped. It holds no records.
    Torn,
    /// Not a segment of this log.
    Foreign,
    /// A segment written by a newer build.
    Newer { found: u32 },
}

pub fn check_header(bytes: &[u8]) -> Header {
    let magic_seen = bytes.len().min(MAGIC.len());
    if bytes[..magic_seen] != MAGIC[..magic_seen] {
        return Header::Foreign;
    }
    let Some(version) = bytes.get(8..12) else {
        return Header::Torn;
    };
    let found = u32::from_le_bytes([version[0], version[1], version[2], version[3]]);
    if found > VERSION {
        Header::Newer { found }
    } else if found == 0 {
        Header::Foreign
    } else if bytes.len() < HEADER_LEN {
        Header::Torn
    } else {
        Header::Valid
    }
}

/// The bytes a record with this payload takes in a segment.
pub fn record_len(payload_len: usize) -> usize {
    RECORD_PREFIX_LEN + BODY_FIXED_LEN + payload_len
}

/// The bytes before a record's payload: length, checksum, kind and arrival
/// time. The checksum covers the payload, so this reads all of it; callers
/// compute it before taking a lock, then copy the payload after it.
pub fn record_head(
    kind: Kind,
    arrived_unix_nanos: u64,
    payload: &[u8],
) -> [u8; RECORD_PREFIX_LEN + BODY_FIXED_LEN] {
    let body_len = u32::try_from(BODY_FIXED_LEN + payload.len()).unwrap_or(u32::MAX);
    let arrived = arrived_unix_nanos.to_le_bytes();
    let mut crc = crc32fast::Hasher::new();
    crc.update(&[kind as u8]);
    crc.update(&arrived);
    crc.update(payload);
    let mut head = [0u8; RECORD_PREFIX_LEN + BODY_FIXED_LEN];
    head[..4].copy_from_slice(&body_len.to_le_bytes());
    head[4..8].copy_from_slice(&crc.finalize().to_le_bytes());
    head[8] = kind as u8;
    head[9..].copy_from_slice(&arrived);
    head
}

/// Appends one record to `out`. The caller has checked `payload.len() <= MAX_PAYLOAD`.
pub fn encode_record(kind: Kind, arrived_unix_nanos: u64, payload: &[u8], out: &mut Vec<u8>) {
    out.reserve(record_len(payload.len()));
    out.extend_from_slice(&record_head(kind, arrived_unix_nanos, payload));
    out.extend_from_slice(payload);
}

/// Why the bytes at some offset are not a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// Fewer than 8 bytes left: the length and checksum were torn.
    ShortPrefix,
    /// The length is below the body's fixed part.
    BadLength(u32),
    /// Fewer bytes left than the length says: the body was torn.
    ShortBody {
        len: u32,
        left: usize,
    },
    BadChecksum,
    UnknownKind(u8),
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Damage::ShortPrefix => f.write_str("torn record header"),
            Damage::BadLength(len) => write!(f, "impossible record length {len}"),
            Damage::ShortBody { len, left } => {
                write!(f, "torn record: {len} bytes announced, {left} left")
            }
            Damage::BadChecksum => f.write_str("checksum mismatch"),
            Damage::UnknownKind(k) => write!(f, "unknown record kind {k}"),
        }
    }
}

/// One record read from the front of a buffer.
#[derive(Debug, PartialEq, Eq)]
pub struct Decoded<'a> {
    pub kind: Kind,
    pub arrived_unix_nanos: u64,
    pub payload: &'a [u8],
    /// Bytes the record took, prefix included.
    pub len: usize,
}

/// Reads the record at the front of `buf`: `Ok(None)` at the end of the buffer.
pub fn decode_record(buf: &[u8]) -> Result<Option<Decoded<'_>>, Damage> {
    if buf.is_empty() {
        return Ok(None);
    }
    let (Some(len), Some(crc)) = (read_u32(buf, 0), read_u32(buf, 4)) else {
        return Err(Damage::ShortPrefix);
    };
    if (len as usize) < BODY_FIXED_LEN {
        return Err(Damage::BadLength(len));
    }
    let left = buf.len() - RECORD_PREFIX_LEN;
    let Some(body) = buf[RECORD_PREFIX_LEN..].get(..len as usize) else {
        return Err(Damage::ShortBody { len, left });
    };
    if crc32fast::hash(body) != crc {
        return Err(Damage::BadChecksum);
    }
    let kind = Kind::from_byte(body[0]).ok_or(Damage::UnknownKind(body[0]))?;
    let mut arrived = [0u8; 8];
    arrived.copy_from_slice(&body[1..BODY_FIXED_LEN]);
    Ok(Some(Decoded {
        kind,
        arrived_unix_nanos: u64::from_le_bytes(arrived),
        payload: &body[BODY_FIXED_LEN..],
        len: RECORD_PREFIX_LEN + body.len(),
    }))
}

fn read_u32(buf: &[u8], at: usize) -> Option<u32> {
    let b = buf.get(at..at + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(kind: Kind, arrived: u64, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_record(kind, arrived, payload, &mut out);
        out
    }

    #[test]
    fn records_round_trip_for_every_kind() {
        for kind in Kind::ALL {
            for payload in [&b""[..], b"x", &[7u8; 1000][..]] {
                let bytes = encoded(kind, 1_700_000_000_123_456_789, payload);
                assert_eq!(bytes.len(), record_len(payload.len()));
                let d = decode_record(&bytes).unwrap().unwrap();
                assert_eq!(d.kind, kind);
                assert_eq!(d.arrived_unix_nanos, 1_700_000_000_123_456_789);
                assert_eq!(d.payload, payload);
                assert_eq!(d.len, bytes.len());
            }
        }
    }

    #[test]
    fn kinds_have_their_wire_numbers() {
        assert_eq!(Kind::OtlpProtobuf as u8, 1);
        assert_eq!(Kind::OtlpJson as u8, 2);
        assert_eq!(Kind::from_byte(0), None);
        assert_eq!(Kind::from_byte(3), Some(Kind::OtlpLogsProtobuf));
        assert_eq!(Kind::from_byte(4), Some(Kind::OtlpLogsJson));
        assert_eq!(Kind::from_byte(5), None);
    }

    #[test]
    fn consecutive_records_decode_in_order() {
        let mut buf = encoded(Kind::OtlpJson, 1, b"first");
        encode_record(Kind::OtlpProtobuf, 2, b"second", &mut buf);
        let a = decode_record(&buf).unwrap().unwrap();
        let b = decode_record(&buf[a.len..]).unwrap().unwrap();
        assert_eq!((a.payload, b.payload), (&b"first"[..], &b"second"[..]));
        assert_eq!(decode_record(&buf[a.len + b.len..]), Ok(None));
    }

    #[test]
    fn every_truncation_is_damage_not_a_record() {
        let bytes = encoded(Kind::OtlpProtobuf, 5, b"payload");
        for cut in 1..bytes.len() {
            let got = decode_record(&bytes[..cut]);
            let want = if cut < RECORD_PREFIX_LEN {
                Damage::ShortPrefix
            } else {
                Damage::ShortBody {
                    len: 9 + 7,
                    left: cut - RECORD_PREFIX_LEN,
                }
            };
            assert_eq!(got, Err(want), "cut at {cut}");
        }
    }

    #[test]
    fn any_flipped_byte_is_damage() {
        let bytes = encoded(Kind::OtlpJson, 9, b"some payload");
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x10;
            assert!(decode_record(&b).is_err(), "flip at {i} went unnoticed");
        }
    }

    #[test]
    fn unknown_kind_with_a_good_checksum_is_damage() {
        let mut bytes = encoded(Kind::OtlpJson, 9, b"p");
        bytes[8] = 42;
        let crc = crc32fast::hash(&bytes[8..]);
        bytes[4..8].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(decode_record(&bytes), Err(Damage::UnknownKind(42)));
    }

    #[test]
    fn a_length_below_the_fixed_body_is_damage() {
        let mut bytes = encoded(Kind::OtlpJson, 9, b"p");
        bytes[..4].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(decode_record(&bytes), Err(Damage::BadLength(3)));
    }

    #[test]
    fn headers_are_checked() {
        let h = encode_header();
        assert_eq!(&h[..8], b"TSWAL001");
        assert_eq!(check_header(&h), Header::Valid);
        for cut in 0..HEADER_LEN {
            assert_eq!(check_header(&h[..cut]), Header::Torn, "cut at {cut}");
        }
        assert_eq!(check_header(b"SQLite format 3\0"), Header::Foreign);
        assert_eq!(check_header(b"TSWAL00"), Header::Torn);
        assert_eq!(check_header(b"X"), Header::Foreign);
        let mut newer = h;
        newer[8..12].copy_from_slice(&2u32.to_le_bytes());
        assert_eq!(check_header(&newer), Header::Newer { found: 2 });
        let mut zero = h;
        zero[8..12].copy_from_slice(&0u32.to_le_bytes());
        assert_eq!(check_header(&zero), Header::Foreign);
    }
}
