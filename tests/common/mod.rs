//! Helpers shared by the integration tests.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout
)]

pub mod conformance;
pub mod live;
pub mod llm;
pub mod llm_stub;
pub mod metrics;
pub mod outage;
pub mod pg;
pub mod pki;
pub mod process;
pub mod proxy;
pub mod records;
pub mod service;
pub mod silent;
pub mod tls_listener;
pub mod weather;

/// reqwest's client, as the tests use it. reqwest is built without a
/// crypto provider of its own (the service's binaries install ring in
/// `main`), so the tests install it too before building one.
pub fn http() -> reqwest::Client {
    http_builder().build().unwrap()
}

pub fn http_builder() -> reqwest::ClientBuilder {
    toolscore::tls::install_default_provider();
    reqwest::Client::builder()
}
