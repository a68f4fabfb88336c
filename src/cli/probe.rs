//! `toolscore probe URL`: one HTTP GET, exit 0 on a 2xx answer. The image is
//! distroless (no shell, no curl), so the chart's `helm test` pod and anyone
//! checking a container from inside use the binary itself.

use std::time::Duration;

use super::Exit;

/// How long the whole request may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// GETs `url`; prints the status (or why there is none) to stderr.
/// `Ok` for 2xx, `Failed` for any other answer or none, `Usage` for a URL
/// that is not `http://…` (no TLS client is built in).
pub fn run(url: &str, timeout: Duration) -> Exit {
    if !url.starts_with("http://") {
        eprintln!("error: {url:?} is not an http:// URL");
        return Exit::Usage;
    }
    let client = match reqwest::blocking::Client::builder()
        .timeout(timeout)
        .build()
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: cannot build an HTTP client: {e}");
            return Exit::Failed;
        }
    };
    match client.get(url).send() {
        Ok(response) if response.status().is_success() => {
            eprintln!("{url}: {}", response.status());
            Exit::Ok
        }
        Ok(response) => {
            eprintln!("{url}: {}", response.status());
            Exit::Failed
        }
        Err(e) => {
            eprintln!("{url}: no answer: {e}");
            Exit::Failed
        }
    }
}
