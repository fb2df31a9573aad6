//! What the HTTP listener serves before the storage is open. The listener
//! opens first, so that probes get an answer while the embedded engine
//! recovers its data directory (a large one takes a while) or the Redis
//! backend connects: `/healthz` says the process is alive and starting,
//! `/readyz` and every other request answer 503 `not_ready`. The API's
//! router takes over once it is set ([`Routing::open`]).

use std::sync::{Arc, OnceLock};

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use serde_json::json;

use super::error::error_response;
use podium_core::error::{ApiError, Code};

/// The router a listener serves: none yet while the storage opens.
#[derive(Clone)]
pub struct Routing {
    app: Arc<OnceLock<Router>>,
    /// The backend's kind, for `/healthz` while starting.
    backend: &'static str,
}

impl Routing {
    /// Nothing served yet but the starting answers.
    pub fn starting(backend: &'static str) -> Self {
        Routing {
            app: Arc::default(),
            backend,
        }
    }

    /// `app` served from the start.
    pub fn ready(app: Router) -> Self {
        let r = Routing::starting("");
        r.open(app);
        r
    }

    /// Serves `app` from now on (only the first call counts).
    pub fn open(&self, app: Router) {
        let _ = self.app.set(app);
    }

    pub(crate) fn current(&self) -> Option<Router> {
        self.app.get().cloned()
    }

    /// The answer to `req` while the storage opens.
    pub(crate) fn starting_answer(&self, req: &Request) -> Response {
        if req.uri().path() == "/healthz" {
            return Json(json!({
                "status": "starting",
                "backend": self.backend,
                "version": env!("CARGO_PKG_VERSION"),
                "commit": crate::COMMIT,
            }))
            .into_response();
        }
        let why = match self.backend {
            "redis" => "podium is connecting to Redis",
            _ => "podium is recovering its data directory",
        };
        error_response(
            &ApiError::new(Code::NotReady, format!("{why}; it serves once ready")).retry_after(1),
        )
    }
}
