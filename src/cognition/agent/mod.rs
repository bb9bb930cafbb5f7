//! The expert's agent loop: build the prompt, call the model, run the tools it asks for one
//! at a time in the order asked, and stop on an answer, a question for the operator, or a
//! limit (iterations, tokens, cost). Uses `crate::core`, `crate::aem` and `crate::llm` only;
//! tools, interjections and the event log come in through small traits ([`ToolExecutor`], [`Interjections`], [`LoopEvents`]).

mod budget;
mod ports;
mod prompt;
mod run;

pub use budget::{Budget, BudgetLimit, DEFAULT_MAX_ITERATIONS, Limits, Spend};
pub use ports::{
    EventRecorder, InterjectionInbox, InterjectionSender, Interjections, LoopEvent, LoopEvents,
    MARKER_SHOWN, NoEvents, NoInterjections, NoTools, Prompt, RecordError, ToolExecutor,
    ToolFailure, interjection_channel, swap_marker,
};
pub use prompt::{
    CONTEXT_TAG, ExpertBrief, TOOL_OUTPUT_TAG, system_prompt, unwrap_tool_output, wrap_context,
    wrap_tool_output,
};
pub use run::{
    ASK_OPERATOR, AgentLoop, CORRECTION_PREFIX, PendingQuestion, TaskInput, TaskOutcome, TaskState,
    TaskStatus, ask_operator_spec, system_message,
};
