//! A TCP proxy that can go silent: while silent it keeps accepting
//! connections and reading what clients send, and answers nothing (a
//! half-open load balancer, a firewall that drops packets after the
//! handshake, a wrong port on a service that waits for its own protocol).
//! Otherwise it forwards to its upstream, if it has one.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

pub struct SilentProxy {
    pub addr: SocketAddr,
    silent: Arc<AtomicBool>,
    /// Bumped to cut every forwarded connection.
    cut: watch::Sender<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl SilentProxy {
    /// Listens on a port of loopback; silent from the start when
    /// `upstream` is `None`.
    pub async fn start(upstream: Option<SocketAddr>) -> SilentProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let silent = Arc::new(AtomicBool::new(upstream.is_none()));
        let (cut, _) = watch::channel(0u64);
        let task = tokio::spawn({
            let (silent, cut) = (silent.clone(), cut.clone());
            async move {
                while let Ok((client, _)) = listener.accept().await {
                    let forward = upstream.filter(|_| !silent.load(Ordering::Relaxed));
                    tokio::spawn(serve(client, forward, cut.subscribe()));
                }
            }
        });
        SilentProxy {
            addr,
            silent,
            cut,
            task,
        }
    }

    /// From now on new connections get no answer; forwarded ones are closed.
    pub fn go_silent(&self) {
        self.silent.store(true, Ordering::Relaxed);
        self.cut.send_modify(|n| *n += 1);
    }

    /// New connections are forwarded again.
    pub fn answer_again(&self) {
        self.silent.store(false, Ordering::Relaxed);
    }
}

impl Drop for SilentProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(mut client: TcpStream, upstream: Option<SocketAddr>, mut cut: watch::Receiver<u64>) {
    let Some(upstream) = upstream else {
        // Read and drop whatever comes, until the client gives up.
        let mut sink = [0u8; 4096];
        while matches!(client.read(&mut sink).await, Ok(n) if n > 0) {}
        return;
    };
    let Ok(mut server) = TcpStream::connect(upstream).await else {
        return;
    };
    tokio::select! {
        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
        _ = cut.changed() => {}
    }
}
