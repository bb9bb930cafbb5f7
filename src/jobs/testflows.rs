//! Flows for tests and the benchmark, registered only when a runner is started with
//! `--test-flows` (mesh `test`, role `ops`). Their side effects are recorded in files named by
//! the job's input, and they can stop at gates (files a test creates) so a test can kill the
//! runner at an exact point.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tracing::info;

use super::ctx::{Ctx, StepError};
use super::flow::{FlowFuture, Registry};

/// Which version of the `edit` flow to register: the original, or one whose first step calls
/// another function (an edit made while a job is in flight).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// As first deployed.
    Original,
    /// Edited.
    Edited,
}

/// Registers the test flows under `test/ops/…`.
pub fn register(registry: &mut Registry, variant: Variant) {
    registry
        .register("test/ops/steps", steps)
        .register("test/ops/timer", timer)
        .register("test/ops/approve", approve)
        .register("test/ops/effect", effect)
        .register("test/ops/noop", noop)
        .register("test/ops/bulky", bulky)
        .register("test/ops/judge", judge)
        .register("test/ops/publish", publish);
    match variant {
        Variant::Original => registry.register("test/ops/edit", edit_v1),
        Variant::Edited => registry.register("test/ops/edit", edit_v2),
    };
}

/// How long a test flow waits at a gate before the step fails: a test that never opens it
/// (because it failed first) leaves no runner waiting forever.
pub const GATE_LIMIT: Duration = Duration::from_secs(300);

/// Waits until the file `path` exists (no gate without a path), at most [`GATE_LIMIT`].
async fn gate(path: Option<&str>, what: &str) -> Result<(), StepError> {
    let Some(path) = path else { return Ok(()) };
    if Path::new(path).exists() {
        return Ok(());
    }
    info!("test flow: waiting at gate {what} ({path})");
    let opened = tokio::time::timeout(GATE_LIMIT, async {
        while !Path::new(path).exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    opened.await.map_err(|_| {
        StepError::new(format!(
            "gate {what} ({path}) was not opened within {GATE_LIMIT:?}"
        ))
    })
}

fn append_line(path: &str, line: &str) -> Result<(), StepError> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(StepError::new)?;
    writeln!(f, "{line}").map_err(StepError::new)?;
    f.sync_all().map_err(StepError::new)
}

/// The side-effect stub: records one call in the record file, between two optional gates.
async fn record_step(args: Value) -> Result<Value, StepError> {
    let step = args["step"].as_str().unwrap_or("?").to_string();
    gate(args["before"].as_str(), &format!("before {step}")).await?;
    if let Some(record) = args["record"].as_str() {
        append_line(record, &step)?;
    }
    info!("test flow: side effect of {step} done");
    gate(args["after"].as_str(), &format!("after {step}")).await?;
    Ok(json!({ "step": step }))
}

fn steps<'a>(ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
    Box::pin(async move {
        let n = input["n"].as_u64().unwrap_or(3);
        let mut done = Vec::new();
        for i in 1..=n {
            let step = format!("s{i}");
            let gates = &input["gates"][&step];
            let args = json!({
                "step": step,
                "record": input["record"],
                "before": gates["before"],
                "after": gates["after"],
            });
            done.push(ctx.step(&step, record_step, args).await?);
        }
        Ok(json!({ "steps": done }))
    })
}

async fn a_v1(args: Value) -> Result<Value, StepError> {
    Ok(json!({ "a": args }))
}

async fn a_v2(args: Value) -> Result<Value, StepError> {
    Ok(json!({ "a2": args }))
}

async fn b(args: Value) -> Result<Value, StepError> {
    Ok(json!({ "b": args }))
}

fn edit_v1<'a>(ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
    Box::pin(async move {
        let a = ctx.step("a", a_v1, input.clone()).await?;
        let go = ctx.wait_signal("go").await?;
        let b = ctx.step("b", b, go).await?;
        Ok(json!({ "a": a, "b": b }))
    })
}

fn edit_v2<'a>(ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
    Box::pin(async move {
        // Step a's body changed what it means, so it carries a new id.
        let a = ctx.step_as("a", "a@2", input.clone(), a_v2).await?;
        let go = ctx.wait_signal("go").await?;
        let b = ctx.step("b", b, go).await?;
        Ok(json!({ "a": a, "b": b }))
    })
}

fn timer<'a>(ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
    Box::pin(async move {
        let a = ctx
            .step(
                "a",
                record_step,
                json!({"step": "a", "record": input["record"]}),
            )
            .await?;
        let seconds = input["seconds"].as_f64().unwrap_or(2.0);
        ctx.sleep("nap", Duration::from_secs_f64(seconds)).await?;
        let b = ctx
            .step(
                "b",
                record_step,
                json!({"step": "b", "record": input["record"]}),
            )
            .await?;
        Ok(json!({ "a": a, "b": b }))
    })
}

fn approve<'a>(ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
    Box::pin(async move {
        let draft = ctx.step("draft", a_v1, input).await?;
        let answer = ctx.wait_approval("publish", "publish the draft?").await?;
        Ok(json!({ "draft": draft, "approved": answer.approved, "note": answer.note }))
    })
}

async fn post(args: Value) -> Result<Value, StepError> {
    let file = args["file"].as_str().unwrap_or_default();
    append_line(file, "posted")?;
    if let Some(record) = args["record"].as_str() {
        append_line(record, "act")?;
    }
    gate(args["after_act"].as_str(), "after act").await?;
    Ok(Value::Null)
}

async fn posted(args: Value) -> Result<Option<Value>, StepError> {
    let file = args["file"].as_str().unwrap_or_default();
    let text = std::fs::read_to_string(file).unwrap_or_default();
    Ok(text
        .lines()
        .any(|l| l == "posted")
        .then(|| json!({ "seen": "posted" })))
}

fn effect<'a>(ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
    Box::pin(async move {
        let seen = ctx.effect("post", input, post, posted).await?;
        Ok(json!({ "confirmed": seen }))
    })
}

async fn nothing(_: Value) -> Result<Value, StepError> {
    Ok(Value::Null)
}

/// A string of `args["bytes"]` bytes: a step whose result the log may not hold.
async fn sized(args: Value) -> Result<Value, StepError> {
    let bytes = args["bytes"].as_u64().unwrap_or(0) as usize;
    Ok(Value::String("x".repeat(bytes)))
}

/// One step returning `input["bytes"]` bytes, then done.
fn bulky<'a>(ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
    Box::pin(async move {
        let made = ctx.step("make", sized, input).await?;
        Ok(json!({ "made": made.as_str().map_or(0, str::len) }))
    })
}

fn noop<'a>(ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
    Box::pin(async move {
        let n = input["n"].as_u64().unwrap_or(1);
        for _ in 0..n {
            ctx.step("noop", nothing, Value::Null).await?;
        }
        Ok(json!({ "n": n }))
    })
}

fn publish<'a>(ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
    Box::pin(async move {
        let seen = ctx
            .effect_by_expert("publish", "test/publisher", "send it", || {
                posted(input.clone())
            })
            .await?;
        Ok(json!({ "confirmed": seen }))
    })
}

fn judge<'a>(ctx: &'a mut Ctx, input: Value) -> FlowFuture<'a> {
    Box::pin(async move {
        let question = input["question"]
            .as_str()
            .unwrap_or("is this true?")
            .to_string();
        let answer = ctx.ask_expert("verdict", "test/judge", &question).await?;
        Ok(json!({ "answer": answer }))
    })
}
