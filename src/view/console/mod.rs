//! The console node `/iron/console`: an HTTP server on the operator's machine (127.0.0.1 by
//! default) that shows the running system from the log and the control plane and keeps no
//! state of its own. Every request needs the deployment's console token
//! (`<state_dir>/console.token`, mode 0600, made on first use and printed by `iron up`), as
//! `Authorization: Bearer <token>` or `?token=<token>`; without it, 401.
//!
//! Served: the page (`/`, one HTML file built into the binary: no CDN), the JSON it reads and
//! the actions it takes ([`api`]), `/metrics` (Prometheus text format, [`metrics`]) and
//! `/api/events` (the event log live over Server-Sent Events, with filters, [`events`]).
//! A state-changing request (anything but GET) must also come from the console's own page:
//! a browser's `Origin` must name this host, and a client that sends none (curl, a script)
//! must present the token in the `Authorization` header, never in the address.

mod api;
pub mod events;
pub mod metrics;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::{
    Router,
    extract::{Request, State},
    http::{StatusCode, header},
    middleware::{self, Next},
    response::{Html, IntoResponse, Response},
    routing::{get, post},
};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::cognition::expert::operator::OperatorVoice;
use crate::cognition::inbox::store::STORE_FILE;
use crate::core::config::Config;
use crate::core::identity::{self, Authority, OperatorKey, Statement};
use crate::core::token;
use crate::jobs::Stored;
use crate::jobs::journal::Diaries;
use crate::spine::control::ControlPlane;
use crate::spine::control::lifecycle::{CallbackError, ManagedNode, NodeContext, RunError};
use crate::spine::durable::AnyLog;
use crate::view::desk::Desk;
use crate::view::overview::Overview;
use crate::workspace::land::{ReviewReader, record_refused};
use metrics::Metrics;

/// Where the console listens unless told otherwise.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:7480";
/// The variable that tells it otherwise (the `--listen` option wins).
pub const LISTEN_ENV: &str = "IRON_CONSOLE_LISTEN";
/// The token's file in the state directory.
pub const TOKEN_FILE: &str = "console.token";
/// The variable naming the operator the console acts as (default: IRON_OPERATOR, else the
/// first of the configuration's `operators:` with a key on this machine, else the only key
/// here). The console signs every action from the page with that operator's key, so a page
/// session is that operator.
pub const OPERATOR_ENV: &str = "IRON_CONSOLE_OPERATOR";

/// The key the console signs with, or why it has none (then every action is refused and the
/// page is read-only). Read again for each action, so a key made after the console started
/// (`iron operator add`, as `iron up` suggests) is used at once.
fn operator_key(operators: &[String]) -> Result<OperatorKey, Refused> {
    let named = std::env::var(OPERATOR_ENV)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .or_else(|| std::env::var(identity::OPERATOR_ENV).ok())
        .filter(|v| !v.trim().is_empty());
    let dir = identity::key_dir().map_err(Refused::NoOperator)?;
    let key = match named {
        Some(name) => OperatorKey::load(&dir, &name),
        None => operators
            .iter()
            .find_map(|name| OperatorKey::load(&dir, name).ok())
            .map_or_else(|| OperatorKey::for_cli(None), Ok),
    };
    key.map_err(Refused::NoOperator)
}

/// Why the console does not do what a request asks.
#[derive(Debug, thiserror::Error)]
enum Refused {
    /// No operator key: the page is read-only.
    #[error("the console acts as no operator ({0}); it is read-only")]
    NoOperator(#[source] identity::IdentityError),
    /// The operator's statement is not one this deployment takes.
    #[error(transparent)]
    NotAdmitted(identity::IdentityError),
    /// A browser sent it from another site.
    #[error("a request from another site may not change anything")]
    CrossSite,
    /// A browser sent it from another origin.
    #[error("a request from origin {origin} may not change anything (only {own})")]
    Origin {
        /// Where it came from.
        origin: String,
        /// The console's own origin.
        own: String,
    },
    /// Neither a page's origin nor the token in the header.
    #[error(
        "a state-changing request needs the page's Origin, or the token in the Authorization \
         header"
    )]
    NoOrigin,
}

/// The console token of the deployment whose state directory is `state_dir` (made on first
/// use).
pub fn console_token(state_dir: &Path) -> std::io::Result<String> {
    token::load_or_create(&token_path(state_dir))
}

fn token_path(state_dir: &Path) -> PathBuf {
    state_dir.join(TOKEN_FILE)
}

/// The address the console listens on: `listen`, else [`LISTEN_ENV`], else
/// [`DEFAULT_LISTEN`].
pub fn listen_address(listen: Option<&str>) -> String {
    listen
        .map(str::to_string)
        .or_else(|| std::env::var(LISTEN_ENV).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| DEFAULT_LISTEN.to_string())
}

/// `/iron/console`.
#[derive(Debug, Default)]
pub struct ConsoleNode {
    /// `host:port` to listen on (see [`listen_address`]).
    pub listen: Option<String>,
}

/// What `configure` opened.
pub struct ConsoleDeps {
    listener: Mutex<Option<tokio::net::TcpListener>>,
    shared: Arc<Shared>,
}

struct Shared {
    log: AnyLog,
    token: String,
    tenant: String,
    /// The configuration's `operators:`, for finding the page's operator's key.
    operators: Vec<String>,
    /// Whose signed actions this deployment takes.
    people: Authority,
    metrics: Mutex<Metrics>,
    overview: Mutex<Overview>,
    /// The bulletins published, read on as the page looks again.
    desk: Mutex<Desk>,
    /// Every job's diary, read on as the page and `/metrics` look again.
    jobs: Mutex<Diaries>,
    /// The hunks' review, read on likewise.
    review: Mutex<ReviewReader>,
    control: ControlPlane,
    node: Arc<hiroz::node::ZNode>,
    voice: OperatorVoice,
}

impl Shared {
    /// What `read` makes of every job's diary, read on from the last look.
    async fn diaries<T>(
        &self,
        read: impl FnOnce(&BTreeMap<(String, String), Vec<Stored>>) -> T,
    ) -> Result<T, crate::jobs::JobError> {
        let mut diaries = self.jobs.lock().await;
        Ok(read(diaries.refresh(&self.log).await?))
    }

    /// Every job.
    async fn jobs(&self) -> Result<Vec<crate::jobs::ops::Summary>, crate::jobs::JobError> {
        self.diaries(crate::jobs::ops::summaries).await
    }

    /// The bulletins held for an editor.
    async fn held(&self) -> Result<Vec<crate::view::desk::Held>, crate::jobs::JobError> {
        self.diaries(|d| crate::view::desk::held(d, &self.people))
            .await
    }

    /// The page's operator's key, or why there is none.
    fn key(&self) -> Result<OperatorKey, Refused> {
        operator_key(&self.operators)
    }

    /// Who acts from the page: the operator's name, or `nobody`.
    fn operator(&self) -> String {
        self.key()
            .map_or_else(|_| "nobody".to_string(), |k| k.name().to_string())
    }

    /// `action` on `subject` with `decision`, signed as the page's operator and checked as
    /// the node acting on it would check it; a refusal is recorded on the log.
    async fn sign(
        &self,
        action: &str,
        subject: &str,
        decision: &str,
    ) -> Result<Statement, (axum::http::StatusCode, String)> {
        let signed = match self.key() {
            Ok(key) => {
                let statement = key.sign(action, subject, decision);
                self.people
                    .admit(&statement, None, Some(identity::FRESH_FOR))
                    .map(|()| statement)
                    .map_err(Refused::NotAdmitted)
            }
            Err(why) => Err(why),
        };
        if let Err(why) = &signed {
            let what = format!("{action} {subject} from the console");
            let recorded = record_refused(
                &self.log,
                &self.tenant,
                "node/iron/console",
                &what,
                &self.operator(),
                &why.to_string(),
            )
            .await;
            if let Err(e) = recorded {
                tracing::warn!("recording the refusal: {e}");
            }
        }
        signed.map_err(|why| (axum::http::StatusCode::FORBIDDEN, why.to_string()))
    }

    /// The hunks' review, read on from the last look.
    async fn review(
        &self,
    ) -> Result<crate::workspace::review::Review, crate::workspace::land::LandError> {
        self.review.lock().await.read(&self.log).await
    }
}

impl ManagedNode for ConsoleNode {
    type Deps = ConsoleDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<ConsoleDeps, CallbackError> {
        let config = Config::load().map_err(CallbackError::refused_by)?;
        let log = AnyLog::open(&config)
            .await
            .map_err(CallbackError::refused_by)?;
        let token = console_token(&config.state_dir).map_err(|e| {
            let path = token_path(&config.state_dir);
            CallbackError::refused_while(format!("the console token {}", path.display()), e)
        })?;
        let addr = listen_address(self.listen.as_deref());
        let parsed: SocketAddr = addr.parse().map_err(|e| {
            CallbackError::refused(format!("`{addr}` is not host:port ({e}); set {LISTEN_ENV}"))
        })?;
        let listener = tokio::net::TcpListener::bind(parsed).await.map_err(|e| {
            CallbackError::refused_while(format!("cannot listen on {addr} (set {LISTEN_ENV})"), e)
        })?;
        let voice = OperatorVoice::new(&ctx.node).map_err(CallbackError::refused_by)?;
        if let Err(why) = operator_key(&config.operators) {
            tracing::warn!("{why}");
        }
        let people = Authority::new(&config.state_dir, &config.operators);
        Ok(ConsoleDeps {
            listener: Mutex::new(Some(listener)),
            shared: Arc::new(Shared {
                log,
                token,
                operators: config.operators.clone(),
                review: Mutex::new(ReviewReader::new(people.clone())),
                people,
                overview: Mutex::new(Overview::of_tenant(&config.tenant)),
                desk: Mutex::new(Desk::of_tenant(&config.tenant)),
                jobs: Mutex::new(Diaries::of("*")),
                tenant: config.tenant.clone(),
                metrics: Mutex::new(Metrics::with_stores(
                    config.state_path(&config.memory.projection),
                    config.state_path(Path::new(STORE_FILE)),
                )),
                control: ctx.control.clone(),
                node: ctx.node.clone(),
                voice,
            }),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<ConsoleDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let Some(listener) = deps.listener.lock().await.take() else {
            return Err(RunError::new(
                "serving the console",
                "the listener was used by an earlier activation; configure again",
            ));
        };
        if let Ok(addr) = listener.local_addr() {
            info!("console at http://{addr}/ (token in the state directory's {TOKEN_FILE})");
        }
        axum::serve(listener, router(deps.shared.clone()))
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await
            .map_err(|e| RunError::new("serving the console", e))
    }
}

impl axum::extract::FromRef<Arc<Shared>> for AnyLog {
    fn from_ref(shared: &Arc<Shared>) -> AnyLog {
        shared.log.clone()
    }
}

fn router(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/metrics", get(metrics))
        .route("/api/events", get(events::events))
        .route("/api/state", get(api::state))
        .route("/api/nodes", get(api::nodes))
        .route("/api/timeline/{task}", get(api::timeline))
        .route("/api/jobs/{job}/{action}", post(api::job))
        .route("/api/desk/{bulletin}/{action}", post(api::desk))
        .route("/api/tasks/{task}/{action}", post(api::operator))
        .route("/api/hunks/{hunk}/{action}", post(api::hunk))
        .route("/api/lifecycle", post(api::lifecycle))
        .layer(middleware::from_fn_with_state(shared.clone(), authorize))
        .with_state(shared)
}

/// Lets a request through only with the console token.
async fn authorize(State(shared): State<Arc<Shared>>, request: Request, next: Next) -> Response {
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let query = request
        .uri()
        .query()
        .and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("token=")));
    let presented = bearer.or(query).unwrap_or("");
    if !token::same(presented.as_bytes(), shared.token.as_bytes()) {
        warn!(path = %request.uri().path(), "console request refused: missing or wrong token");
        return (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "the console token is needed (`Authorization: Bearer <token>` or `?token=`); \
             `iron up` prints it, and it is in the state directory's console.token\n",
        )
            .into_response();
    }
    if let Err(why) = same_origin(&request, bearer.is_some()) {
        warn!(path = %request.uri().path(), "console request refused: {why}");
        return (StatusCode::FORBIDDEN, format!("{why}\n")).into_response();
    }
    next.run(request).await
}

/// Whether a state-changing `request` comes from the console's own page (or from a client
/// that is no browser and sent the token in its header). Reads pass.
fn same_origin(request: &Request, bearer: bool) -> Result<(), Refused> {
    if matches!(request.method().as_str(), "GET" | "HEAD") {
        return Ok(());
    }
    let headers = request.headers();
    let value = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if value("sec-fetch-site").is_some_and(|s| s == "cross-site") {
        return Err(Refused::CrossSite);
    }
    match value("origin") {
        Some(origin) => {
            let host = value("host").unwrap_or("");
            let own = format!("http://{host}");
            if host.is_empty() || origin != own {
                return Err(Refused::Origin {
                    origin: origin.into(),
                    own,
                });
            }
            Ok(())
        }
        None if bearer => Ok(()),
        None => Err(Refused::NoOrigin),
    }
}

async fn metrics(State(shared): State<Arc<Shared>>) -> Response {
    let jobs = match shared.jobs().await {
        Ok(jobs) => jobs,
        Err(e) => return (StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")).into_response(),
    };
    let mut m = shared.metrics.lock().await;
    match m.refresh(&shared.log, &jobs).await {
        Ok(()) => (
            [(
                header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            m.render(),
        )
            .into_response(),
        Err(e) => (StatusCode::SERVICE_UNAVAILABLE, format!("{e}\n")).into_response(),
    }
}

/// The page: one file, its script and styles inline (no external asset).
async fn index() -> Response {
    (
        [
            (header::CONTENT_SECURITY_POLICY, PAGE_POLICY),
            (header::REFERRER_POLICY, "no-referrer"),
        ],
        Html(include_str!("page.html")),
    )
        .into_response()
}

/// What the page may load and do: only from this origin, no frames.
const PAGE_POLICY: &str = "default-src 'self'; script-src 'unsafe-inline'; \
     style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'";
