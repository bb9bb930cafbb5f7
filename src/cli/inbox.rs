//! `iron inbox`: a message into the inbox as any channel's would arrive, and a session stuck to
//! one expert (or released) as the engine would do it on `/iron/session_control`.

use std::time::Duration;

use hiroz::Builder;

use super::connect::connect;
use super::{CliError, InboxCommand};
use crate::{
    cognition::engine::check_domain,
    interfaces::{InboxMessage, SessionControl},
    spine::control::ControlError,
};

pub(super) async fn run(
    router: &str,
    command: InboxCommand,
    timeout: Duration,
) -> Result<(), CliError> {
    match command {
        InboxCommand::Send {
            source,
            user,
            destination,
            text,
        } => send(router, source, user, destination, text, timeout).await,
        InboxCommand::Stick { session, expert } => {
            check_expert(&expert)?;
            control(router, &session, SessionControl::OP_STICK, &expert, timeout).await
        }
        InboxCommand::Unstick { session } => {
            control(router, &session, SessionControl::OP_UNSTICK, "", timeout).await
        }
    }
}

async fn send(
    router: &str,
    source: String,
    user: String,
    destination: String,
    text: String,
    timeout: Duration,
) -> Result<(), CliError> {
    if user.trim().is_empty() {
        return Err(CliError::Failed("--user must not be empty".into()));
    }
    let text = if text == "-" {
        std::io::read_to_string(std::io::stdin()).map_err(|source| CliError::Io {
            what: "reading the message from stdin".into(),
            source,
        })?
    } else {
        text
    };
    let (_control, node) = connect(router, timeout).await?;
    publish_inbox(&node, &source, &user, &destination, &text, timeout).await?;
    println!("sent");
    Ok(())
}

/// Refuses to stick a session to an expert the engine would refuse a goal for: not
/// `<mesh>/<role>`, not in the built catalog, or in a parked mesh (the engine's own check).
fn check_expert(expert: &str) -> Result<(), CliError> {
    if expert.trim().is_empty() {
        return Err(CliError::Failed(
            "the expert must not be empty (`iron inbox unstick` lets routing choose again)".into(),
        ));
    }
    let config = super::load_config()?;
    let catalog = crate::aem::read_state_catalog(&config)
        .map_err(|e| CliError::Failed(format!("{e}; build it with `iron catalog build`")))?;
    check_domain(expert, &catalog)
        .map_err(|why| CliError::Failed(format!("cannot stick a session to {expert}: {why}")))
}

/// Publishes one `SessionControl`, once the inbox is listening.
async fn control(
    router: &str,
    session: &str,
    op: u8,
    expert: &str,
    timeout: Duration,
) -> Result<(), CliError> {
    if session.trim().is_empty() {
        return Err(CliError::Failed("--session must not be empty".into()));
    }
    let (_control, node) = connect(router, timeout).await?;
    let msg = SessionControl {
        session_id: session.to_string(),
        op,
        expert: expert.to_string(),
    };
    publish_once(&node, "/iron/session_control", &msg, timeout).await?;
    println!("sent");
    Ok(())
}

/// Publishes `msg` on `topic` once the inbox listens (a message nobody receives is lost:
/// refuse rather than pretend).
async fn publish_once<M>(
    node: &hiroz::node::ZNode,
    topic: &str,
    msg: &M,
    timeout: Duration,
) -> Result<(), CliError>
where
    M: hiroz::msg::ZMessage + hiroz::WithTypeInfo + Send + Sync + 'static,
    for<'a> M::Serdes: hiroz::msg::ZSerializer<Input<'a> = &'a M>,
{
    let publisher =
        node.create_pub::<M>(topic)
            .build()
            .map_err(|source| ControlError::Declare {
                what: format!("publisher on {topic}"),
                source,
            })?;
    if !publisher.wait_for_subscription(1, timeout).await {
        return Err(CliError::Failed(format!(
            "nobody subscribes to {topic} after {timeout:?}; is the inbox running (`iron up`)?"
        )));
    }
    publisher
        .async_publish(msg)
        .await
        .map_err(|source| ControlError::Call {
            what: format!("publish on {topic}"),
            source,
        })?;
    Ok(())
}

/// Publishes one message on `/iron/raw_inbox`, as a channel would.
pub(super) async fn publish_inbox(
    node: &hiroz::node::ZNode,
    source: &str,
    user: &str,
    destination: &str,
    text: &str,
    timeout: Duration,
) -> Result<(), CliError> {
    let now = crate::spine::control::action::now_stamp();
    let msg = InboxMessage {
        source: source.into(),
        user_id: user.into(),
        destination: destination.into(),
        text: text.into(),
        attachments_json: "[]".into(),
        received: hiroz_msgs::builtin_interfaces::Time {
            sec: now.sec,
            nanosec: now.nanosec,
        },
    };
    publish_once(node, "/iron/raw_inbox", &msg, timeout).await
}
