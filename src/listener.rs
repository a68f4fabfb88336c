//! The service's listeners, in one table: the two OTLP receivers and the
//! two query APIs. Configuration defaults, TLS and token checks, metric
//! labels, start-up, shutdown and the docs' check read each listener's
//! name, key, protocol and default endpoint from here, and every dispatch
//! on a listener is an exhaustive `match`, so a fifth one is a compile
//! error in each place that must learn about it.

use std::net::SocketAddr;

/// One of the service's listeners.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Listener {
    /// OTLP/gRPC `TraceService` (`receivers.grpc`).
    OtlpGrpc,
    /// OTLP/HTTP `POST /v1/traces` (`receivers.http`).
    OtlpHttp,
    /// The HTTP API and web UI (`api.http`).
    ApiHttp,
    /// The gRPC query API, `toolscore.v1.ScoresService` (`api.grpc`).
    ApiGrpc,
}

/// What a listener speaks, for its TLS ALPN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/2 only (gRPC).
    Grpc,
    /// HTTP/1.1 (and HTTP/2 when a client asks for it in clear text).
    Http,
}

impl Protocol {
    /// The ALPN protocol TLS offers.
    pub const fn alpn(self) -> &'static [u8] {
        match self {
            Protocol::Grpc => b"h2",
            Protocol::Http => b"http/1.1",
        }
    }
}

impl Listener {
    pub const ALL: [Listener; 4] = [
        Listener::OtlpGrpc,
        Listener::OtlpHttp,
        Listener::ApiHttp,
        Listener::ApiGrpc,
    ];

    /// Its name in metrics' `listener` and `stage` labels and in logs.
    pub const fn name(self) -> &'static str {
        match self {
            Listener::OtlpGrpc => "otlp_grpc",
            Listener::OtlpHttp => "otlp_http",
            Listener::ApiHttp => "api_http",
            Listener::ApiGrpc => "api_grpc",
        }
    }

    /// What it is, in errors (`cannot listen on …`) and logs.
    pub const fn description(self) -> &'static str {
        match self {
            Listener::OtlpGrpc => "OTLP/gRPC receiver",
            Listener::OtlpHttp => "OTLP/HTTP receiver",
            Listener::ApiHttp => "HTTP API",
            Listener::ApiGrpc => "gRPC query API",
        }
    }

    /// Its configuration key (with `enabled`, `endpoint`, `tls`, `auth`).
    pub const fn key(self) -> &'static str {
        match self {
            Listener::OtlpGrpc => "receivers.grpc",
            Listener::OtlpHttp => "receivers.http",
            Listener::ApiHttp => "api.http",
            Listener::ApiGrpc => "api.grpc",
        }
    }

    pub const fn protocol(self) -> Protocol {
        match self {
            Listener::OtlpGrpc | Listener::ApiGrpc => Protocol::Grpc,
            Listener::OtlpHttp | Listener::ApiHttp => Protocol::Http,
        }
    }

    /// Its port when `endpoint` is not set: OTLP's registered ports for
    /// the receivers.
    pub const fn default_port(self) -> u16 {
        match self {
            Listener::OtlpGrpc => 4317,
            Listener::OtlpHttp => 4318,
            Listener::ApiHttp => 8080,
            Listener::ApiGrpc => 8081,
        }
    }

    /// Its endpoint when `endpoint` is not set: the loopback interface, so
    /// that nothing is exposed until a configuration says so.
    pub fn default_endpoint(self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.default_port()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_keys_and_ports_are_each_listeners_own() {
        let distinct = |f: fn(Listener) -> String| {
            let all: std::collections::HashSet<String> = Listener::ALL.map(f).into();
            all.len() == Listener::ALL.len()
        };
        assert!(distinct(|l| l.name().to_owned()));
        assert!(distinct(|l| l.key().to_owned()));
        assert!(distinct(|l| l.default_port().to_string()));
        assert_eq!(
            Listener::OtlpGrpc.default_endpoint().to_string(),
            "127.0.0.1:4317"
        );
    }
}
