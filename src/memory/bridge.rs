//! The memory bridge, `/iron/tools/memory`: the native tool server through which an expert
//! saves a document to memory itself (`save_document`), as an operator does with
//! `iron memory save`. The expert's tool manager has already passed both gates (clearance:
//! `save` is a write; paths: a `path` must lie in the expert's writable workspace roots); the
//! bridge, acting for a caller whose credential it verified, checks again what the catalog
//! declares rather than trusting the call:
//!
//! - the caller is an expert of the catalog holding the grant `memory/save_document`;
//! - `path` passes the caller's own gate 2 ([`crate::tools::roots::expert_policy`]): inside a
//!   root it may write, never a governance file; a relative path is taken against this
//!   process's working directory, which `iron up` and the launch file share with the experts;
//! - `url` is fetched only when the deployment allows it (`IRON_DOCUMENT_URLS`, comma-separated
//!   http(s) URLs compared parsed, as for webhooks; empty: no URL is fetched), without
//!   following redirects;
//! - `scope` (default: the caller's most specific writable memory) must lie under a namespace
//!   one of its `episodic`/`semantic` mounts may write.
//!
//! Then the document goes to the object store and `document_saved` to the log, with the caller
//! as actor, exactly as an operator's save.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tracing::info;

use super::documents::{self, SaveError, Saving};
use super::fetch::{self, ReadError};
use super::text::MediaType;
use crate::aem::{Access, Catalog, MemoryMount};
use crate::core::config::Config;
use crate::spine::control::lifecycle::{CallbackError, ManagedNode, NodeContext, RunError};
use crate::spine::durable::AnyLog;
use crate::tools::paths::SchemaHints;
use crate::tools::roots::{expert_policy, scrub_env};
use crate::tools::ros::{BridgeDeps, BridgeFuture};
use crate::tools::webhooks::{AllowList, WebhookError};
use crate::tools::{Bridge, CallerKey, RemoteCaller};

/// The service (and node) name of the memory bridge.
pub const SERVICE: &str = "/iron/tools/memory";
/// The server name a mesh declares it under.
pub const SERVER: &str = "memory";
/// The tool that saves a document.
pub const SAVE_DOCUMENT: &str = "save_document";
/// Environment variable listing the URLs documents may be fetched from.
pub const URLS_ENV: &str = "IRON_DOCUMENT_URLS";
/// How long a fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Memory kinds whose writable mounts a document may be saved under (what a wake recalls).
const DOCUMENT_KINDS: &[&str] = &["episodic", "semantic"];

/// Why a save was refused or failed; its text is the tool's error.
#[derive(Debug, thiserror::Error)]
pub enum BridgeSaveError {
    /// The caller is not an expert of the catalog, or holds no grant of the tool.
    #[error("{0} holds no grant of memory/save_document in the catalog")]
    NotGranted(String),
    /// The arguments are not what the tool takes.
    #[error("{0}")]
    BadArgument(String),
    /// The caller's memory declaration does not let it write there.
    #[error("{caller} may not save to {scope:?}: its memory may write {writable}")]
    Scope {
        /// The caller.
        caller: String,
        /// The scope asked for.
        scope: String,
        /// Where it may write, in words.
        writable: String,
    },
    /// The caller's gate 2 refuses the path, or cannot be built.
    #[error("{0}")]
    Path(String),
    /// The deployment does not allow the URL.
    #[error("{0} (set {URLS_ENV} to allow document URLs)")]
    Url(#[from] WebhookError),
    /// The document could not be read.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// Saving failed.
    #[error(transparent)]
    Save(#[from] SaveError),
    /// The saved event is not what a save writes.
    #[error(transparent)]
    Event(#[from] crate::protocol::ProtocolError),
}

/// The bridge's behaviour, independent of ROS.
pub struct MemoryTools {
    log: AnyLog,
    catalog: Catalog,
    tenant: String,
    project: PathBuf,
    state_dir: PathBuf,
    urls: AllowList,
    http: reqwest::Client,
}

impl MemoryTools {
    /// A bridge saving into `log` for the experts of `catalog`; relative paths are taken
    /// against `project`, and URLs fetched only when `urls` allows them.
    pub fn new(
        log: AnyLog,
        catalog: Catalog,
        config: &Config,
        project: PathBuf,
        urls: AllowList,
    ) -> reqwest::Result<Self> {
        Ok(Self {
            log,
            catalog,
            tenant: config.tenant.clone(),
            project,
            state_dir: config.state_dir.clone(),
            urls,
            http: fetch::client(FETCH_TIMEOUT, false)?,
        })
    }

    /// `save_document`: checks, reads and saves; answers with the event and what was saved.
    pub async fn save_document(
        &self,
        arguments: Value,
        caller: &RemoteCaller,
    ) -> Result<Value, BridgeSaveError> {
        let expert = self
            .catalog
            .expert(&caller.caller)
            .filter(|e| e.tools.contains_key(&format!("{SERVER}/{SAVE_DOCUMENT}")))
            .ok_or_else(|| BridgeSaveError::NotGranted(caller.caller.clone()))?;
        let args = Arguments::parse(&arguments)?;
        let writable = writable_prefixes(&expert.memory);
        let scope = match &args.scope {
            Some(s) => s.trim_matches('/').to_string(),
            None => writable.first().cloned().unwrap_or_default(),
        };
        if !writable
            .iter()
            .any(|w| scope == *w || scope.starts_with(&format!("{w}/")))
        {
            return Err(BridgeSaveError::Scope {
                caller: caller.caller.clone(),
                scope,
                writable: if writable.is_empty() {
                    "nowhere (it declares no writable episodic memory)".to_string()
                } else {
                    writable.join(", ")
                },
            });
        }
        let (name, bytes, served) = match (&args.path, &args.url) {
            (Some(path), None) => {
                let resolved = self.check_path(expert, path)?;
                (path.clone(), fetch::read_file(&resolved)?, None)
            }
            (None, Some(url)) => {
                self.urls.check(url)?;
                let (bytes, served) = fetch::fetch(&self.http, url).await?;
                (url.clone(), bytes, served)
            }
            _ => {
                return Err(BridgeSaveError::BadArgument(
                    "give exactly one of `path` (a file in your workspace) and `url`".into(),
                ));
            }
        };
        let kind = fetch::kind_of(&name, &bytes, args.media_type, served)?;
        let saving = Saving {
            name,
            title: args.title.unwrap_or_default(),
            kind,
            bytes,
        };
        let event =
            documents::save(&self.log, &self.tenant, &scope, &caller.caller, saving).await?;
        let saved = event.payload::<crate::protocol::payload::DocumentSaved>()?;
        Ok(json!({
            "saved": event.event_id, "scope": event.namespace_path(), "media_type": kind.mime(),
            "size": saved.size, "pages": saved.pages,
        }))
    }

    /// The caller's gate 2 on `path`: the resolved file, or why not.
    fn check_path(
        &self,
        expert: &crate::aem::ExpertEntry,
        path: &str,
    ) -> Result<PathBuf, BridgeSaveError> {
        let env = scrub_env(std::env::vars().collect());
        let (policy, _) =
            expert_policy(expert, &self.catalog, &self.project, &self.state_dir, &env)
                .map_err(|e| BridgeSaveError::Path(e.to_string()))?;
        let schema = crate::aem::native::native_schema(SERVER, SAVE_DOCUMENT);
        let resolved = policy
            .check_call(
                &format!("{SERVER}/{SAVE_DOCUMENT}"),
                &self.project,
                &json!({ "path": path }),
                &SchemaHints::of(&schema),
            )
            .map_err(|d| BridgeSaveError::Path(d.to_string()))?;
        Ok(resolved
            .into_iter()
            .find(|(arg, _)| arg == "path")
            .map(|(_, p)| p)
            .unwrap_or_else(|| Path::new(path).to_path_buf()))
    }
}

/// The arguments of `save_document`.
struct Arguments {
    path: Option<String>,
    url: Option<String>,
    scope: Option<String>,
    title: Option<String>,
    media_type: Option<MediaType>,
}

impl Arguments {
    fn parse(arguments: &Value) -> Result<Self, BridgeSaveError> {
        let bad = |why: String| BridgeSaveError::BadArgument(why);
        let object = arguments
            .as_object()
            .ok_or_else(|| bad("arguments must be a JSON object".into()))?;
        let known = ["path", "url", "scope", "title", "media_type"];
        if let Some(k) = object.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(bad(format!(
                "unknown argument `{k}`; save_document takes {}",
                known.join(", ")
            )));
        }
        let text = |k: &str| -> Result<Option<String>, BridgeSaveError> {
            match object.get(k) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if !s.trim().is_empty() => Ok(Some(s.clone())),
                Some(_) => Err(bad(format!("`{k}` must be a non-empty string"))),
            }
        };
        let media_type = text("media_type")?
            .map(|w| {
                MediaType::from_word(&w)
                    .ok_or_else(|| bad(format!("`media_type` {w:?}: one of text, html, pdf")))
            })
            .transpose()?;
        Ok(Self {
            path: text("path")?,
            url: text("url")?,
            scope: text("scope")?,
            title: text("title")?,
            media_type,
        })
    }
}

/// Where `mounts` let an expert save documents: the own namespace of each writable mount of a
/// recalled kind (`facts/<mesh>/<role>` for `own`, `facts/<mesh>` for `mesh`, `facts` for
/// `system`), most specific first.
pub fn writable_prefixes(mounts: &[MemoryMount]) -> Vec<String> {
    let mut prefixes: Vec<String> = mounts
        .iter()
        .filter(|m| DOCUMENT_KINDS.contains(&m.kind.as_str()))
        .filter(|m| matches!(m.access, Access::Write | Access::ReadWrite))
        .filter_map(|m| m.namespaces.first().cloned())
        .collect();
    prefixes.sort_by_key(|p| std::cmp::Reverse(p.matches('/').count()));
    prefixes.dedup();
    prefixes
}

impl Bridge for MemoryTools {
    fn tools(&self) -> Vec<String> {
        vec![SAVE_DOCUMENT.to_string()]
    }

    fn call<'a>(
        &'a self,
        _tool: &'a str,
        arguments: Value,
        caller: &'a RemoteCaller,
    ) -> BridgeFuture<'a> {
        Box::pin(async move { Ok(self.save_document(arguments, caller).await?) })
    }
}

/// The memory bridge as a managed node: `configure` opens the log and reads the catalog,
/// `run` serves [`SERVICE`] while active.
#[derive(Debug, Default)]
pub struct MemoryToolsNode;

impl ManagedNode for MemoryToolsNode {
    type Deps = BridgeDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<BridgeDeps, CallbackError> {
        let config = Config::load().map_err(CallbackError::refused_by)?;
        let catalog = crate::aem::read_state_catalog(&config).map_err(CallbackError::refused_by)?;
        let log = AnyLog::open(&config)
            .await
            .map_err(CallbackError::refused_by)?;
        let urls = AllowList::parse(&std::env::var(URLS_ENV).unwrap_or_default())
            .map_err(|e| CallbackError::refused_while(URLS_ENV, e))?;
        let project = std::env::current_dir().map_err(CallbackError::refused_by)?;
        info!(
            "saving documents for the experts granted memory/{SAVE_DOCUMENT}; {} URL prefix(es) allowed",
            urls.len()
        );
        let key = CallerKey::open(&config.state_dir).map_err(CallbackError::refused_by)?;
        let bridge = MemoryTools::new(log, catalog, &config, project, urls)
            .map_err(CallbackError::refused_by)?;
        Ok(BridgeDeps {
            bridge: Arc::new(bridge),
            key,
            ctx: ctx.clone(),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<BridgeDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        deps.serve(SERVICE, shutdown).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::durable::EventLog;

    struct Setup {
        _dir: tempfile::TempDir,
        project: PathBuf,
        bridge: MemoryTools,
    }

    async fn setup(urls: &str) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let project = dir.path().join("project");
        std::fs::create_dir_all(project.join("workspace/newsroom")).unwrap();
        std::fs::create_dir_all(project.join("config")).unwrap();
        std::fs::write(
            project.join("workspace/newsroom/notice.txt"),
            "The swing bridge is closed until Friday.",
        )
        .unwrap();
        std::fs::write(project.join("config/iron.yaml"), "tenant: acme\n").unwrap();
        let config = Config {
            state_dir: dir.path().join("state"),
            ..Config::default()
        };
        let catalog =
            crate::aem::compile(&Path::new(env!("CARGO_MANIFEST_DIR")).join("aem")).unwrap();
        let log = AnyLog::open(&config).await.unwrap();
        let urls = AllowList::parse(urls).unwrap();
        let bridge = MemoryTools::new(log, catalog, &config, project.clone(), urls).unwrap();
        Setup {
            _dir: dir,
            project,
            bridge,
        }
    }

    async fn events(s: &Setup) -> Vec<crate::core::envelope::Envelope> {
        let stored = s.bridge.log.read("MEM", "mem.>", 1, 100).await.unwrap();
        stored
            .iter()
            .map(|m| serde_json::from_slice(&m.payload).unwrap())
            .collect()
    }

    fn caller(expert: &str) -> RemoteCaller {
        RemoteCaller {
            caller: expert.to_string(),
            task_id: "t1".to_string(),
        }
    }

    async fn save(s: &Setup, who: &str, args: Value) -> Result<Value, BridgeSaveError> {
        s.bridge.save_document(args, &caller(who)).await
    }

    #[tokio::test]
    async fn a_granted_expert_saves_a_workspace_file_to_its_own_memory() {
        let s = setup("").await;
        let saved = save(
            &s,
            "newsroom/editor",
            json!({"path": "workspace/newsroom/notice.txt", "title": "Notice"}),
        )
        .await
        .unwrap();
        assert_eq!(saved["scope"], "facts/newsroom/editor");
        assert_eq!(saved["media_type"], "text/plain");
        let absolute = s.project.join("workspace/newsroom/notice.txt");
        let deeper = save(
            &s,
            "newsroom/editor",
            json!({"path": absolute, "scope": "facts/newsroom/editor/notices"}),
        )
        .await
        .unwrap();
        assert_eq!(deeper["scope"], "facts/newsroom/editor/notices");
        let saved = events(&s).await;
        assert_eq!(saved.len(), 2);
        assert!(saved.iter().all(|e| e.actor == "newsroom/editor"));
        assert!(
            saved
                .iter()
                .all(|e| e.kind == crate::core::event_kind::EventKind::DocumentSaved)
        );
        let saved: crate::protocol::payload::DocumentSaved = saved[0].payload().unwrap();
        assert_eq!(saved.title, "Notice");
    }

    #[tokio::test]
    async fn what_the_declarations_do_not_allow_is_refused_and_nothing_is_saved() {
        let s = setup("").await;
        let outside = s.project.parent().unwrap().join("secret.txt");
        std::fs::write(&outside, "not yours").unwrap();
        std::os::unix::fs::symlink(&outside, s.project.join("workspace/newsroom/link.txt"))
            .unwrap();
        let refused = |r: Result<Value, BridgeSaveError>| r.unwrap_err().to_string();
        let notice = json!({"path": "workspace/newsroom/notice.txt"});
        // No grant of the tool, or no such expert.
        for who in ["newsroom/analyst", "nobody/here"] {
            let why = refused(save(&s, who, notice.clone()).await);
            assert!(why.contains("holds no grant"), "{why}");
        }
        // Gate 2: outside the writable roots, governance, traversal, a planted link, home.
        for path in [
            outside.display().to_string(),
            "config/iron.yaml".to_string(),
            "workspace/newsroom/../../config/iron.yaml".to_string(),
            "workspace/newsroom/link.txt".to_string(),
            "~/notes.txt".to_string(),
        ] {
            let why = refused(save(&s, "newsroom/editor", json!({ "path": path })).await);
            assert!(why.starts_with("gate 2"), "{path}: {why}");
        }
        // Memory it may only read, or another role's.
        for scope in [
            "facts/newsroom",
            "facts/newsroom/analyst",
            "facts",
            "memory/x",
        ] {
            let why = refused(
                save(
                    &s,
                    "newsroom/editor",
                    json!({"path": "workspace/newsroom/notice.txt", "scope": scope}),
                )
                .await,
            );
            assert!(why.contains("may not save to"), "{scope}: {why}");
            assert!(why.contains("facts/newsroom/editor"), "{why}");
        }
        // A URL the deployment does not allow is never fetched.
        let why = refused(
            save(
                &s,
                "newsroom/editor",
                json!({"url": "http://127.0.0.1:9/x.html"}),
            )
            .await,
        );
        assert!(why.contains(URLS_ENV), "{why}");
        // Arguments it does not take.
        for args in [
            json!({}),
            json!({"path": "workspace/newsroom/notice.txt", "url": "http://127.0.0.1:9/"}),
            json!({"path": "workspace/newsroom/notice.txt", "dest": "x"}),
            json!({"path": "workspace/newsroom/notice.txt", "media_type": "docx"}),
            json!({"path": 7}),
        ] {
            let why = refused(save(&s, "newsroom/editor", args.clone()).await);
            assert!(!why.is_empty(), "{args}");
        }
        assert!(events(&s).await.is_empty());
    }

    #[test]
    fn offers_what_the_compiler_lets_a_mesh_declare() {
        assert_eq!(
            crate::aem::native_tools(SERVER).unwrap(),
            [SAVE_DOCUMENT],
            "the bridge and the catalog agree"
        );
        assert_eq!(SERVICE, format!("/iron/tools/{SERVER}"));
    }
}
