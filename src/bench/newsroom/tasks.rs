//! The judgment as the newsroom's flow runs it: two tasks, `group_claims` then `cross_check`,
//! each sent to the offline backend as an instruction with the whole window in its JSON block
//! (in the flow, each in its own expert process), the model's vectors answered from memory as
//! the model service answers a window it has embedded before. The bench's judgment line times
//! the judge's functions in one batch; these lines time what each step of the flow pays, and
//! what the cross-check of one claim costs when a new item's job asks only for it.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::BenchError;
use crate::llm::offline::{OfflineBackend, claims, task_block};
use crate::llm::{BoxFuture, ChatModel, ChatRequest, Message};
use crate::memory::semantic::{EmbedError, Embedder};

/// How long each of the flow's two judgment tasks took.
pub(super) struct TaskTimes {
    pub grouping: Duration,
    pub checking: Duration,
    /// The cross-check of one claim among all the others, as a new item's job asks it.
    pub checking_one: Duration,
}

/// Vectors by text, as a model service that has embedded the window already answers them.
struct Remembered(BTreeMap<String, Vec<f32>>);

impl Embedder for Remembered {
    fn name(&self) -> &str {
        "remembered"
    }

    fn embed<'a>(
        &'a self,
        texts: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<Vec<f32>>, EmbedError>> {
        let found = texts.iter().map(|t| {
            self.0
                .get(t)
                .cloned()
                .ok_or_else(|| EmbedError(format!("no vector remembered for {t:?}")))
        });
        let vectors = found.collect();
        Box::pin(async move { vectors })
    }
}

/// Runs the flow's two tasks on `reports`, with `meanings` remembered when there are some.
pub(super) async fn run(
    reports: &[claims::Report],
    meanings: Option<&claims::Meanings>,
) -> Result<TaskTimes, BenchError> {
    let backend = match meanings {
        None => OfflineBackend::lexical(),
        Some(m) => {
            let by_text = reports.iter().filter_map(|r| {
                let vector = m.get(&r.id)?.clone();
                Some((claims::meaning_text(r), vector))
            });
            OfflineBackend::with_meanings(Arc::new(Remembered(by_text.collect())))
        }
    };
    let started = Instant::now();
    let grouped = perform(
        &backend,
        json!({"iron_task": "group_claims", "reports": reports}),
    )
    .await?;
    let grouping = started.elapsed();
    let claims = grouped.get("claims").cloned().unwrap_or(Value::Null);
    let started = Instant::now();
    let checked = perform(
        &backend,
        json!({"iron_task": "cross_check", "claims": claims, "reports": reports}),
    )
    .await?;
    let checking = started.elapsed();
    let verdicts = |answer: &Value| {
        answer
            .get("verdicts")
            .and_then(Value::as_array)
            .map(Vec::len)
    };
    let Some(all) = verdicts(&checked) else {
        return Err(BenchError::Failed(format!(
            "the cross-check task answered no verdicts: {checked}"
        )));
    };
    // The last claim, as a new item's is: rated alone, read among every other.
    let last = claims
        .as_array()
        .and_then(|c| c.last())
        .map(|c| c["id"].clone());
    let started = Instant::now();
    let one = perform(
        &backend,
        json!({"iron_task": "cross_check", "claims": claims, "reports": reports, "check": [last]}),
    )
    .await?;
    let checking_one = started.elapsed();
    if all > 0 && verdicts(&one) != Some(1) {
        return Err(BenchError::Failed(format!(
            "the cross-check of one claim answered otherwise than one verdict: {one}"
        )));
    }
    Ok(TaskTimes {
        grouping,
        checking,
        checking_one,
    })
}

/// One task through the offline backend, as an expert's instruction carries it; its JSON answer.
async fn perform(backend: &OfflineBackend, task: Value) -> Result<Value, BenchError> {
    let request = ChatRequest {
        messages: vec![Message::user(task_block(&task))],
        ..ChatRequest::default()
    };
    let fail = |e: String| BenchError::Failed(format!("the {} task: {e}", task["iron_task"]));
    let response = backend
        .chat(&request)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let text = response.text.unwrap_or_default();
    serde_json::from_str(&text).map_err(|e| fail(e.to_string()))
}
