//! Helpers shared by the integration tests.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout
)]

pub mod conformance;
pub mod live;
pub mod outage;
pub mod pg;
pub mod pki;
pub mod process;
pub mod records;
pub mod service;
pub mod weather;
