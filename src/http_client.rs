//! The one outgoing HTTP client: the LLM judges, self-telemetry, `toolscore
//! probe` and the load generator's probe. hyper's pooled client over a
//! rustls connector whose configuration comes from `crate::tls`, so the
//! binary carries one TLS stack and one crypto provider. Every request runs
//! under one deadline (connect, send and the whole body), answers are read
//! up to a byte cap, and redirects are never followed: the caller sees the
//! 3xx as it is. A client may go through an HTTP proxy ([`Proxies`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::Uri;
use http_body_util::{BodyExt, Full, LengthLimitError, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::proxy::Tunnel;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::client::proxy::matcher::Matcher;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tower::{Service, ServiceExt};

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

/// Which destinations go through which HTTP proxy: `CONNECT` tunnels for
/// `https://` ones (TLS then runs end to end, the proxy sees only the host
/// and port), absolute-form requests for `http://` ones. Credentials in the
/// proxy's URL (`http://user:password@host:port`) go as
/// `Proxy-Authorization: Basic`.
#[derive(Debug, Clone)]
pub struct Proxies(Arc<Matcher>);

impl Proxies {
    /// curl's rules: `HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY` and `NO_PROXY`
    /// (or their lowercase forms); none set means direct connections.
    pub fn from_env() -> Proxies {
        Proxies(Arc::new(Matcher::from_env()))
    }

    /// Every destination through the HTTP proxy at `url`.
    pub fn all(url: &str) -> Proxies {
        Proxies(Arc::new(Matcher::builder().all(url.to_owned()).build()))
    }

    /// Checks a proxy URL as [`Proxies::all`] takes it: `http://`, a host,
    /// perhaps credentials and a port, no path.
    pub fn check_url(url: &str) -> Result<(), String> {
        let uri: Uri = url.parse().map_err(|e| format!("{e}"))?;
        if uri.scheme_str() != Some("http") {
            return Err("must be an http:// URL (an HTTP proxy)".into());
        }
        if uri.host().is_none_or(str::is_empty) {
            return Err("has no host".into());
        }
        if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
            return Err("must not have a path".into());
        }
        Ok(())
    }
}

/// A pooled client; cloning shares the pool.
#[derive(Debug, Clone)]
pub struct HttpClient {
    pool: Client<HttpsConnector<Connector>, Full<Bytes>>,
    proxies: Option<Proxies>,
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
        HttpClient::with_proxies(tls, timeout, max_body_bytes, None)
    }

    /// As [`HttpClient::new`], through `proxies` where they say so.
    pub fn with_proxies(
        tls: Option<Arc<rustls::ClientConfig>>,
        timeout: Duration,
        max_body_bytes: usize,
        proxies: Option<Proxies>,
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
        let connector = Connector {
            direct: http,
            proxies: proxies.clone(),
        };
        let connector = HttpsConnector::from((connector, tls));
        let pool = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .build(connector);
        Ok(HttpClient {
            pool,
            proxies,
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
        let (mut parts, body) = request.into_parts();
        // Through a proxy, an http:// request carries the proxy's credentials
        // itself (an https:// one has them on its CONNECT).
        if parts.uri.scheme_str() == Some("http")
            && let Some(auth) = self
                .proxies
                .as_ref()
                .and_then(|p| p.0.intercept(&parts.uri))
                .and_then(|i| i.basic_auth().cloned())
        {
            parts
                .headers
                .insert(http::header::PROXY_AUTHORIZATION, auth);
        }
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

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The TCP connector under the TLS one: straight to the destination, or to
/// the proxy [`Proxies`] names for it.
#[derive(Debug, Clone)]
struct Connector {
    direct: HttpConnector,
    proxies: Option<Proxies>,
}

impl Service<Uri> for Connector {
    type Response = Conn;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Conn, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.direct.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let proxy = self.proxies.as_ref().and_then(|p| p.0.intercept(&dst));
        let direct = self.direct.clone();
        Box::pin(async move {
            let Some(proxy) = proxy else {
                let io = direct.oneshot(dst).await?;
                return Ok(Conn { io, proxied: false });
            };
            if proxy.uri().scheme_str() != Some("http") {
                return Err(format!("the proxy {} is not an http:// proxy", proxy.uri()).into());
            }
            if dst.scheme_str() == Some("https") {
                let mut tunnel = Tunnel::new(proxy.uri().clone(), direct);
                if let Some(auth) = proxy.basic_auth() {
                    tunnel = tunnel.with_auth(auth.clone());
                }
                let io = tunnel.oneshot(dst).await?;
                Ok(Conn { io, proxied: false })
            } else {
                let io = direct.oneshot(proxy.uri().clone()).await?;
                Ok(Conn { io, proxied: true })
            }
        })
    }
}

/// A connection; `proxied` (to an HTTP proxy, not a tunnel) makes hyper
/// send absolute-form requests.
struct Conn {
    io: TokioIo<tokio::net::TcpStream>,
    proxied: bool,
}

impl Connection for Conn {
    fn connected(&self) -> Connected {
        self.io.connected().proxy(self.proxied)
    }
}

impl hyper::rt::Read for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
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
