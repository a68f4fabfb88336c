//! The one outgoing HTTP client: the LLM judges, self-telemetry, `toolscore
//! probe` and the load generator's probe. hyper's pooled client over a
//! rustls connector whose configuration comes from `crate::tls`, so the
//! binary carries one TLS stack and one crypto provider. Every request runs
//! under one deadline (connect, send and the whole body), answers are read
//! up to a byte cap, and redirects are never followed: the caller sees the
//! 3xx as it is.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

/// Why a request got no complete answer; the message says what failed.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The URL or a header cannot be sent (nothing reached the network).
    #[error("invalid request: {0}")]
    Request(#[from] http::Error),
    #[error("timed out after {0:?} without a complete answer")]
    Timeout(Duration),
    /// No connection: refused, unresolved, or the TLS handshake failed
    /// (the message then names the certificate problem).
    #[error("cannot connect: {0}")]
    Connect(String),
    /// Connected, but the exchange broke before the answer's head.
    #[error("the request failed: {0}")]
    Send(String),
    /// The answer's head arrived, its body did not.
    #[error("reading the response: {0}")]
    Body(String),
    #[error("the response is larger than {0} bytes")]
    TooLarge(usize),
    /// The crypto provider refused the TLS versions asked for.
    #[error("cannot set up TLS: {0}")]
    Tls(#[from] rustls::Error),
}

impl HttpError {
    /// Whether the deadline ran out (a retry may succeed where a refused
    /// certificate never will).
    pub fn is_timeout(&self) -> bool {
        matches!(self, HttpError::Timeout(_))
    }
}

/// A pooled client; cloning shares the pool.
#[derive(Debug, Clone)]
pub struct HttpClient {
    pool: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    timeout: Duration,
    max_body_bytes: usize,
}

impl HttpClient {
    /// `tls`: the configuration of `https://` URLs, its ALPN list included
    /// (`h2` in it lets a server answer over HTTP/2). `None` for a client
    /// meant for `http://` only: an `https://` URL then fails, as no
    /// certificate is trusted. `timeout` bounds each request from connect to
    /// its body's last byte; a body over `max_body_bytes` is an error.
    pub fn new(
        tls: Option<Arc<rustls::ClientConfig>>,
        timeout: Duration,
        max_body_bytes: usize,
    ) -> Result<HttpClient, HttpError> {
        let tls = match tls {
            Some(tls) => tls,
            None => no_trust()?,
        };
        let mut http = HttpConnector::new();
        // The TLS connector hands `https://` URLs to this TCP connector.
        http.enforce_http(false);
        http.set_nodelay(true);
        // From the parts rather than the builder: the builder rewrites the
        // ALPN list, and the callers' `crate::tls` configurations set it.
        let connector = HttpsConnector::from((http, tls));
        let pool = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .build(connector);
        Ok(HttpClient {
            pool,
            timeout,
            max_body_bytes,
        })
    }

    /// `GET url`.
    pub async fn get(&self, url: &str) -> Result<http::Response<Bytes>, HttpError> {
        let request = http::Request::get(url).body(Bytes::new())?;
        self.send(request).await
    }

    /// Sends `request` and reads the whole answer, any status; must run in
    /// a tokio runtime with I/O and time enabled.
    pub async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        let (parts, body) = request.into_parts();
        let request = http::Request::from_parts(parts, Full::new(body));
        tokio::time::timeout(self.timeout, self.exchange(request))
            .await
            .unwrap_or(Err(HttpError::Timeout(self.timeout)))
    }

    async fn exchange(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        let response = self.pool.request(request).await.map_err(|e| {
            let cause = innermost(&e);
            if e.is_connect() {
                HttpError::Connect(cause)
            } else {
                HttpError::Send(cause)
            }
        })?;
        let (parts, body) = response.into_parts();
        let body = Limited::new(body, self.max_body_bytes)
            .collect()
            .await
            .map_err(|e| match e.downcast_ref::<LengthLimitError>() {
                Some(_) => HttpError::TooLarge(self.max_body_bytes),
                None => HttpError::Body(innermost(&*e)),
            })?;
        Ok(http::Response::from_parts(parts, body.to_bytes()))
    }
}

/// The innermost cause of an error chain: hyper's outer errors only say
/// "client error (Connect)", the inner ones "Connection refused" or
/// "invalid peer certificate: UnknownIssuer".
fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e;
    while let Some(source) = last.source() {
        last = source;
    }
    last.to_string()
}

/// A TLS configuration that trusts no certificate, for plaintext clients.
fn no_trust() -> Result<Arc<rustls::ClientConfig>, HttpError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(rustls::RootCertStore::empty())
        .with_no_client_auth();
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn serve_once(answer: &'static [u8]) -> String {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 4096];
            let _ = socket.read(&mut head).await;
            let _ = socket.write_all(answer).await;
        });
        format!("http://{addr}/")
    }

    #[tokio::test]
    async fn a_body_over_the_cap_is_an_error() {
        let url = serve_once(
            b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\nconnection: close\r\n\r\n0123456789",
        )
        .await;
        let client = HttpClient::new(None, Duration::from_secs(5), 4).unwrap();
        let e = client.get(&url).await.unwrap_err();
        assert!(matches!(e, HttpError::TooLarge(4)), "{e}");
        let client = HttpClient::new(None, Duration::from_secs(5), 10).unwrap();
        let url = serve_once(
            b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\nconnection: close\r\n\r\n0123456789",
        )
        .await;
        let response = client.get(&url).await.unwrap();
        assert_eq!(response.body().as_ref(), b"0123456789");
    }

    #[tokio::test]
    async fn a_redirect_is_returned_not_followed() {
        let url = serve_once(
            b"HTTP/1.1 302 Found\r\nlocation: http://127.0.0.1:1/\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
        )
        .await;
        let client = HttpClient::new(None, Duration::from_secs(5), 1024).unwrap();
        let response = client.get(&url).await.unwrap();
        assert_eq!(response.status(), 302);
    }

    #[tokio::test]
    async fn a_refused_connection_says_so() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let client = HttpClient::new(None, Duration::from_secs(5), 1024).unwrap();
        let e = client.get(&format!("http://{addr}/")).await.unwrap_err();
        assert!(matches!(e, HttpError::Connect(_)), "{e}");
        assert!(!e.is_timeout());
    }

    #[tokio::test]
    async fn a_silent_server_times_out() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = HttpClient::new(None, Duration::from_millis(200), 1024).unwrap();
        let e = client.get(&format!("http://{addr}/")).await.unwrap_err();
        assert!(e.is_timeout(), "{e}");
        drop(listener);
    }

    #[tokio::test]
    async fn an_invalid_url_is_refused_before_connecting() {
        let client = HttpClient::new(None, Duration::from_secs(5), 1024).unwrap();
        let e = client.get("not a url").await.unwrap_err();
        assert!(matches!(e, HttpError::Request(_)), "{e}");
    }
}
