//! Bounded connections for every listener: a cap on open connections (past
//! it, a new connection is closed at once and counted), and for the HTTP/1.1
//! listeners a deadline for each request's headers, which also closes a
//! keep-alive connection left idle that long. `axum::serve` offers neither,
//! and its connection tasks outlive it; here they belong to the serving
//! task, so aborting it cuts every connection off. With TLS, each
//! connection's handshake runs in its own task, under a deadline, so a slow
//! or silent client holds only its own slot.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio_stream::Stream;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::tls::ServerTls;

/// One listener's bounds and the metrics that count against them.
#[derive(Clone)]
pub struct Limits {
    pub max_connections: usize,
    /// HTTP/1.1 only: the headers of a request must arrive within this; a
    /// keep-alive connection idle this long is closed.
    pub read_header_timeout: Duration,
    /// Connections closed at once because `max_connections` were open.
    pub refused: Counter,
    pub open: Gauge,
    /// Set: the listener speaks only TLS.
    pub tls: Option<Arc<ServerTls>>,
}

impl Limits {
    pub fn with_tls(self, tls: Option<Arc<ServerTls>>) -> Limits {
        Limits { tls, ..self }
    }
}

/// An accepted connection, after its TLS handshake if the listener has TLS.
pub enum Conn {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

/// Runs the TLS handshake if the listener has TLS; a failed or late one is
/// counted and the connection dropped (the client sees it closed).
async fn handshake(stream: TcpStream, tls: Option<&ServerTls>) -> Option<Conn> {
    let Some(tls) = tls else {
        return Some(Conn::Plain(stream));
    };
    let accepted = tokio::time::timeout(tls.handshake_timeout(), tls.acceptor().accept(stream));
    match accepted.await {
        Ok(Ok(stream)) => Some(Conn::Tls(Box::new(stream))),
        Ok(Err(e)) => {
            tls.metrics.handshake_failures.inc();
            tracing::debug!(error = %e, "TLS handshake failed");
            None
        }
        Err(_) => {
            tls.metrics.handshake_failures.inc();
            tracing::debug!("TLS handshake timed out");
            None
        }
    }
}

/// A place among a listener's `max_connections`, held while the
/// connection is open.
struct Slot {
    _permit: OwnedSemaphorePermit,
    open: Gauge,
}

impl Slot {
    fn take(permits: &Arc<Semaphore>, limits: &Limits) -> Option<Slot> {
        match permits.clone().try_acquire_owned() {
            Ok(permit) => {
                limits.open.inc();
                Some(Slot {
                    _permit: permit,
                    open: limits.open.clone(),
                })
            }
            Err(_) => {
                limits.refused.inc();
                None
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.open.dec();
    }
}

/// Serves `router` over HTTP/1.1 on `listener` until `stop`, then lets open
/// connections finish their current request (the caller bounds how long, by
/// dropping this future or aborting its task).
pub async fn serve_http(
    listener: TcpListener,
    router: Router,
    limits: Limits,
    stop: CancellationToken,
) -> io::Result<()> {
    let header_timeout = limits.read_header_timeout;
    let tls = limits.tls.clone();
    let mut connections = accept_each(listener, &limits, stop.cancelled(), |stream, slot| {
        let service = TowerToHyperService::new(
            router
                .clone()
                .map_request(|r: http::Request<Incoming>| r.map(axum::body::Body::new)),
        );
        let (stop, tls) = (stop.clone(), tls.clone());
        async move {
            let _slot = slot;
            let Some(io) = handshake(stream, tls.as_deref()).await else {
                return;
            };
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(header_timeout)
                .keep_alive(true);
            let connection = builder.serve_connection(TokioIo::new(io), service);
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                _ = connection.as_mut() => {}
                () = stop.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        }
    })
    .await;
    while connections.join_next().await.is_some() {}
    Ok(())
}

/// The accepted connections of a gRPC listener, at most `max_connections`
/// open at once, for tonic's `serve_with_incoming_shutdown`. A task accepts
/// (and shakes hands, with TLS) until `stop` or until tonic drops the stream.
pub fn limited_incoming(
    listener: TcpListener,
    limits: Limits,
    stop: CancellationToken,
) -> impl Stream<Item = io::Result<Limited>> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        let until = async {
            tokio::select! {
                () = stop.cancelled() => {}
                () = tx.closed() => {}
            }
        };
        let tls = limits.tls.clone();
        accept_each(listener, &limits, until, |stream, slot| {
            let (tx, tls) = (tx.clone(), tls.clone());
            async move {
                if let Some(io) = handshake(stream, tls.as_deref()).await {
                    let _ = tx.send(Ok(Limited { io, _slot: slot })).await;
                }
            }
        })
        .await;
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// Accepts until `until`, gives each connection its slot (or closes it at
/// once past `max_connections`) and runs `serve` on it in a task of its
/// own; returns those tasks, still running.
async fn accept_each<F, Fut>(
    listener: TcpListener,
    limits: &Limits,
    until: impl std::future::Future<Output = ()>,
    mut serve: F,
) -> JoinSet<()>
where
    F: FnMut(TcpStream, Slot) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let mut tasks = JoinSet::new();
    let mut until = std::pin::pin!(until);
    loop {
        let stream = tokio::select! {
            () = &mut until => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, usually: give the open
                    // connections a moment to close instead of spinning.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        if let Some(slot) = Slot::take(&permits, limits) {
            tasks.spawn(serve(stream, slot));
        }
    }
    tasks
}

/// A connection holding its place among the listener's connections.
pub struct Limited {
    io: Conn,
    _slot: Slot,
}

impl tonic::transport::server::Connected for Limited {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        match &self.io {
            Conn::Plain(tcp) => tcp.connect_info(),
            Conn::Tls(tls) => tls.get_ref().0.connect_info(),
        }
    }
}

impl AsyncRead for Limited {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl AsyncWrite for Limited {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(io) => Pin::new(io).poll_read(cx, buf),
            Conn::Tls(io) => Pin::new(io.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(io) => Pin::new(io).poll_write(cx, buf),
            Conn::Tls(io) => Pin::new(io.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(io) => Pin::new(io).poll_flush(cx),
            Conn::Tls(io) => Pin::new(io.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(io) => Pin::new(io).poll_shutdown(cx),
            Conn::Tls(io) => Pin::new(io.as_mut()).poll_shutdown(cx),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(io) => Pin::new(io).poll_write_vectored(cx, bufs),
            Conn::Tls(io) => Pin::new(io.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Conn::Plain(io) => io.is_write_vectored(),
            Conn::Tls(io) => io.is_write_vectored(),
        }
    }
}
