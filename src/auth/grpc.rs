//! The check on the gRPC listeners, as a tower layer: a refusal is a
//! `tonic::Status`, which tonic's server turns into the response.

use tower::filter::{Filter, Predicate};

use super::{Failure, Guard, Scope};

/// Checks every call but those `scope_of` leaves open; no guard, no check.
#[derive(Clone)]
pub struct GrpcAuthLayer {
    guard: Option<Guard>,
    scope_of: fn(&str) -> Option<Scope>,
}

impl GrpcAuthLayer {
    pub fn new(guard: Option<Guard>, scope_of: fn(&str) -> Option<Scope>) -> GrpcAuthLayer {
        GrpcAuthLayer { guard, scope_of }
    }
}

impl<S> tower::Layer<S> for GrpcAuthLayer {
    type Service = Filter<S, GrpcAuthLayer>;

    fn layer(&self, inner: S) -> Self::Service {
        Filter::new(inner, self.clone())
    }
}

impl<B> Predicate<http::Request<B>> for GrpcAuthLayer {
    type Request = http::Request<B>;

    fn check(&mut self, req: http::Request<B>) -> Result<http::Request<B>, tower::BoxError> {
        let Some(guard) = &self.guard else {
            return Ok(req);
        };
        let Some(scope) = (self.scope_of)(req.uri().path()) else {
            return Ok(req);
        };
        let authorization = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .map(http::HeaderValue::as_bytes);
        match guard.check(authorization, scope) {
            Ok(()) => Ok(req),
            Err(Failure::Forbidden) => Err(Box::new(tonic::Status::permission_denied(
                "the token does not allow this call",
            ))),
            Err(_) => Err(Box::new(tonic::Status::unauthenticated(
                "authentication required",
            ))),
        }
    }
}
