//! A setting that cannot be used, named by its key path: the one shape of
//! "key path + message" that configuration checks, TLS and provider set-up
//! and the exporter's start return, and that `validate-config` and start-up
//! report with the file it came from.

/// What is wrong with the setting at `key` (`exporter.tls.ca_file`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {message}")]
pub struct KeyError {
    /// The key path, from the configuration's root.
    pub key: String,
    pub message: String,
}

impl KeyError {
    pub fn new(key: String, message: String) -> KeyError {
        KeyError { key, message }
    }
}
