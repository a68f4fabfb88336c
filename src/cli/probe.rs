//! `toolscore probe [--ca-file FILE] URL`: one HTTP GET, exit 0 on a 2xx
//! answer. The image is distroless (no shell, no curl), so the chart's
//! `helm test` pod and anyone checking a container from inside use the
//! binary itself.

use std::path::Path;
use std::time::Duration;

use super::Exit;

/// How long the whole request may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// The most of the answer read: only its status matters, so the cap only
/// bounds memory, and is wide enough for any page of the service.
const MAX_BODY_BYTES: usize = 16 << 20;

/// GETs `url`; prints the status (or why there is none) to stderr.
/// `Ok` for 2xx, `Failed` for any other answer or none, `Usage` for a URL
/// that is neither `http://…` nor `https://…`, or a CA file that cannot be
/// used. An `https://` server's certificate must chain to `ca_file`, else to
/// the system's roots.
pub fn run(url: &str, ca_file: Option<&Path>, timeout: Duration) -> Exit {
    if !url.starts_with("http://") && !url.starts_with("https://") {
        eprintln!("error: {url:?} is not an http:// or https:// URL");
        return Exit::Usage;
    }
    let tls = crate::tls::ClientTlsConfig {
        ca_file: ca_file.map(Path::to_owned),
        ..Default::default()
    };
    let tls = match crate::tls::client_config(&tls, &[b"http/1.1"]) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: --ca-file: {e}");
            return Exit::Usage;
        }
    };
    // A runtime of its own: the probe is the whole process.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return Exit::Failed;
        }
    };
    let answer = runtime.block_on(async {
        crate::http_client::HttpClient::new(Some(tls), timeout, MAX_BODY_BYTES)?
            .get(url)
            .await
    });
    match answer {
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
