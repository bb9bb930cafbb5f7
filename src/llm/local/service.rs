//! The model service: one process (`/iron/models`) holds the local sentence model and answers
//! `iron/srv/Embed` at [`SERVICE`]; experts ask it through [`ServiceEmbedder`] instead of each
//! loading a copy of their own. A copy is about 90 MiB of private memory and a quarter of a
//! second to read and check, once per process: paid by every disposable expert, that is a
//! newsroom's memory and an expert's cold-start budget gone. With the service it is paid once.
//!
//! The node starts without the model too (never pulled, or corrupt): it then answers every
//! request with why, and the callers read words alone, as they would without a model.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;
use hiroz::{Builder, node::ZNode, service::ZClient};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use super::recent::Recent;
use super::{LoadError, LocalEmbedder, MINILM_L6_V2, models_dir_from_env};
use crate::{
    interfaces::{Embed, EmbedRequest, EmbedResponse},
    memory::semantic::{EmbedError, Embedder, embed_each},
    spine::control::{
        call::{CallFailure, call_while_discovering},
        lifecycle::{CallbackError, ManagedNode, NodeContext, RunError},
        serve::{answer, serve_service},
    },
};

/// Where the service answers.
pub const SERVICE: &str = "/iron/models/embed";
/// Most texts one request may carry ([`ServiceEmbedder`] splits longer lists).
pub const MAX_TEXTS: usize = 256;
/// Characters of a text the service reads: the model reads its first
/// [`MAX_TOKENS`](super::MAX_TOKENS) tokens only, which this bound leaves whole in English, and an
/// oversized text costs no tokenizing past it.
pub const MAX_TEXT_CHARS: usize = 4096;
/// How long a fresh client keeps trying to reach a service that is not routable yet (discovery
/// settling in a process that just started; `iron up` brings the model node up before the
/// engine, so the service is there before any expert).
const DISCOVERY: Duration = Duration::from_secs(2);
/// How long a client waits for the service to appear on the ROS graph before taking it for
/// absent (a launch without the model node): the graph is filled from the router when the
/// process's session opens, well before an expert's first embedding.
const ON_GRAPH: Duration = Duration::from_millis(500);

/// The model node (`/iron/models`).
#[derive(Debug, Default)]
pub struct ModelNode;

/// Texts whose vectors the node remembers per generation ([`Recent`]): a newsroom's window of
/// 10,000 reports, twice over, is at most 32,768 vectors of 1.5 KiB, about 50 MiB.
const REMEMBERED: usize = 16_384;

/// What the node serves with: the model, or why there is none.
pub struct ModelDeps {
    model: Result<LocalEmbedder, LoadError>,
    ctx: NodeContext,
    /// Vectors made lately, by (clipped) text.
    recent: std::sync::Mutex<Recent>,
}

impl ManagedNode for ModelNode {
    type Deps = ModelDeps;

    async fn configure(&self, ctx: &NodeContext) -> Result<ModelDeps, CallbackError> {
        let loaded = tokio::task::spawn_blocking(|| {
            models_dir_from_env(None).and_then(|dir| LocalEmbedder::load(&dir))
        })
        .await
        .map_err(|e| CallbackError::refused_while("loading the model stopped", e))?;
        let model = match loaded {
            Ok(model) => {
                info!("serving {} at {SERVICE}", MINILM_L6_V2.embedder_name);
                Ok(model)
            }
            Err(e) => {
                warn!("no local model ({e}): every request is answered with that");
                Err(e)
            }
        };
        Ok(ModelDeps {
            model,
            ctx: ctx.clone(),
            recent: std::sync::Mutex::new(Recent::new(REMEMBERED)),
        })
    }

    async fn run(
        self: Arc<Self>,
        deps: Arc<ModelDeps>,
        shutdown: CancellationToken,
    ) -> Result<(), RunError> {
        let served = deps.clone();
        serve_service::<Embed, _, _>(&deps.ctx.node, SERVICE, shutdown.clone(), move |req| {
            let deps = served.clone();
            async move {
                let response = deps.respond(&req.message().texts).await;
                answer(req, &response, SERVICE).await;
            }
        })
        .map_err(|e| RunError::new("serving the model", e))?;
        shutdown.cancelled().await;
        Ok(())
    }
}

impl ModelDeps {
    /// The answer to a request for `texts`.
    async fn respond(&self, texts: &[String]) -> EmbedResponse {
        let refuse = |error: String| EmbedResponse {
            ok: false,
            error,
            ..EmbedResponse::default()
        };
        let model = match &self.model {
            Ok(model) => model.clone(),
            Err(why) => return refuse(why.to_string()),
        };
        if texts.len() > MAX_TEXTS {
            return refuse(format!(
                "{} texts in one request; at most {MAX_TEXTS}",
                texts.len()
            ));
        }
        let texts: Vec<String> = texts.iter().map(|t| clip(t).to_string()).collect();
        let mut vectors: Vec<Option<Vec<f32>>> = {
            let mut recent = self.recent();
            texts.iter().map(|t| recent.get(t)).collect()
        };
        let missing: Vec<String> = texts
            .iter()
            .zip(&vectors)
            .filter(|(_, v)| v.is_none())
            .map(|(t, _)| t.clone())
            .collect();
        if !missing.is_empty() {
            let made = match embed_each(&model, &missing).await {
                Ok(made) => made,
                Err(e) => return refuse(e.to_string()),
            };
            let mut recent = self.recent();
            let mut made = missing.into_iter().zip(made);
            for slot in vectors.iter_mut().filter(|v| v.is_none()) {
                let (text, vector) = made.next().expect("one vector per missing text");
                recent.put(text, vector.clone());
                *slot = Some(vector);
            }
        }
        EmbedResponse {
            ok: true,
            embedder: MINILM_L6_V2.embedder_name.to_string(),
            dims: MINILM_L6_V2.dims as u32,
            vectors: vectors.into_iter().flatten().flatten().collect(),
            error: String::new(),
        }
    }

    /// The remembered vectors (a panic while holding them loses nothing worth refusing over).
    fn recent(&self) -> std::sync::MutexGuard<'_, Recent> {
        self.recent.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The first [`MAX_TEXT_CHARS`] characters of `text`.
fn clip(text: &str) -> &str {
    match text.char_indices().nth(MAX_TEXT_CHARS) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// Memory's [`Embedder`] answered by the model service: the vectors are the local model's, under
/// its name, so they compare with those the memory worker stores.
///
/// A service found unreachable once stays so for this client: a launch without the model node
/// costs its caller one discovery window, not one per call.
pub struct ServiceEmbedder {
    client: ZClient<Embed>,
    graph: Arc<hiroz::graph::Graph>,
    /// The longest one request may take.
    wait: Duration,
    /// Why the service could not be reached, once it could not.
    unreachable: std::sync::OnceLock<String>,
}

impl ServiceEmbedder {
    /// A client of [`SERVICE`] on `node`, each request waiting at most `wait`.
    pub fn new(node: &ZNode, wait: Duration) -> Result<Self, EmbedError> {
        let client = node
            .create_client::<Embed>(SERVICE)
            .build()
            .map_err(|e| EmbedError(format!("no client of {SERVICE}: {e}")))?;
        Ok(Self {
            client,
            graph: node.graph().clone(),
            wait,
            unreachable: std::sync::OnceLock::new(),
        })
    }

    async fn call(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let unreachable = |why: &str| EmbedError(format!("{SERVICE} is not reachable: {why}"));
        if let Some(why) = self.unreachable.get() {
            return Err(unreachable(why));
        }
        if !self.on_graph().await {
            let why = "no model node on the ROS graph (is model_node in the launch list?)";
            return Err(unreachable(self.unreachable.get_or_init(|| why.into())));
        }
        let request = EmbedRequest {
            texts: texts.to_vec(),
        };
        let response = call_while_discovering(&self.client, &request, self.wait, DISCOVERY)
            .await
            .map_err(|e| match e {
                CallFailure::TimedOut => {
                    EmbedError(format!("{SERVICE} did not answer within {:?}", self.wait))
                }
                CallFailure::Unreachable(why) => unreachable(self.unreachable.get_or_init(|| why)),
            })?;
        vectors_of(response, texts.len())
    }
}

impl ServiceEmbedder {
    /// Whether a server of the service is on the graph, waiting up to [`ON_GRAPH`] for one.
    async fn on_graph(&self) -> bool {
        use hiroz::entity::EndpointKind;
        let deadline = tokio::time::Instant::now() + ON_GRAPH;
        loop {
            let changed = self.graph.change_notify.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if self.graph.count(EndpointKind::Service, SERVICE) > 0 {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return false;
            }
        }
    }
}

/// The vectors of `response` to a request of `expected` texts, refused unless they are the local
/// model's, of its length, one per text.
fn vectors_of(response: EmbedResponse, expected: usize) -> Result<Vec<Vec<f32>>, EmbedError> {
    if !response.ok {
        return Err(EmbedError(format!("{SERVICE}: {}", response.error)));
    }
    let dims = MINILM_L6_V2.dims;
    if response.embedder != MINILM_L6_V2.embedder_name
        || response.dims as usize != dims
        || response.vectors.len() != expected * dims
    {
        return Err(EmbedError(format!(
            "{SERVICE} answered {} values of {} ({} dimensions) for {expected} texts",
            response.vectors.len(),
            response.embedder,
            response.dims
        )));
    }
    Ok(response.vectors.chunks(dims).map(<[f32]>::to_vec).collect())
}

impl Embedder for ServiceEmbedder {
    // The name its vectors are stored under (the model's embedder name, not its directory).
    #[allow(clippy::misnamed_getters)]
    fn name(&self) -> &str {
        MINILM_L6_V2.embedder_name
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        Box::pin(async move {
            let mut vectors = Vec::with_capacity(texts.len());
            for chunk in texts.chunks(MAX_TEXTS) {
                vectors.extend(self.call(chunk).await?);
            }
            Ok(vectors)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_clipped_on_a_character_boundary() {
        assert_eq!(clip("short"), "short");
        let long = "é".repeat(MAX_TEXT_CHARS + 10);
        assert_eq!(clip(&long).chars().count(), MAX_TEXT_CHARS);
    }

    #[test]
    fn only_the_local_models_vectors_of_the_right_shape_are_taken() {
        let dims = MINILM_L6_V2.dims;
        let good = |n: usize| EmbedResponse {
            ok: true,
            embedder: MINILM_L6_V2.embedder_name.into(),
            dims: dims as u32,
            vectors: vec![0.5; n * dims],
            error: String::new(),
        };
        assert_eq!(vectors_of(good(2), 2).unwrap().len(), 2);
        assert!(vectors_of(good(1), 2).is_err());
        let other = EmbedResponse {
            embedder: "openai/other".into(),
            ..good(2)
        };
        assert!(vectors_of(other, 2).is_err());
        let refused = EmbedResponse {
            ok: false,
            error: "no model".into(),
            ..EmbedResponse::default()
        };
        let e = vectors_of(refused, 0).unwrap_err();
        assert!(e.to_string().contains("no model"), "{e}");
    }
}
