//! The operator's side of a running task, over ROS 2 topics every expert shares:
//!
//! | topic | type | who publishes |
//! |---|---|---|
//! | `/iron/interjections` | `iron/msg/Interjection` | an operator (`iron task interject`, `ros2 topic pub`) |
//! | `/iron/questions` | `iron/msg/Question` | the expert whose model called `ask_operator` |
//! | `/iron/answers` | `iron/msg/Answer` | an operator (`iron task answer`, `ros2 topic pub`) |
//!
//! Each expert keeps what arrives for its own tasks (by `task_id`) and ignores the rest. Only
//! the task's owner (the `user_id` of the message that started it, inherited by delegations)
//! or an operator listed in the configuration (`operators:`) may answer or correct a task, and
//! each must prove it: the message's `proof` is the sender's signature of what it says
//! ([`crate::core::identity`]), checked against the deployment's registered keys. Anything
//! else — unsigned, forged, stale, or from someone else — is refused, logged and recorded
//! (`operator_refused`, with the reason).
//! Questions are published transient-local (the last [`QUESTION_DEPTH`]), so an operator who
//! starts listening late still sees what is open. An answer names the question it answers,
//! or leaves `question_id` empty to answer whatever that task asks (now or next); an answer
//! for another question of the task is dropped with a log line.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use hiroz::{
    Builder,
    node::ZNode,
    pubsub::{ZPub, ZSub},
    qos::{QosDurability, QosHistory, QosProfile, QosReliability},
};
use hiroz_msgs::builtin_interfaces::Time;
use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::{
    cognition::agent::{InterjectionInbox, InterjectionSender, interjection_channel},
    core::identity::{self, Authority, FRESH_FOR, IdentityError, OperatorKey, Statement},
    interfaces::{Answer, Interjection, Question},
    spine::control::{ControlError, action::now_stamp},
};

/// Operator corrections for running tasks.
pub const INTERJECTIONS: &str = "/iron/interjections";
/// Questions experts ask.
pub const QUESTIONS: &str = "/iron/questions";
/// Operators' answers.
pub const ANSWERS: &str = "/iron/answers";
/// How many recent questions a late subscriber receives.
pub const QUESTION_DEPTH: usize = 32;

/// The QoS of `/iron/questions`: reliable, transient local, the last [`QUESTION_DEPTH`].
pub fn questions_qos() -> QosProfile {
    QosProfile {
        reliability: QosReliability::Reliable,
        durability: QosDurability::TransientLocal,
        history: QosHistory::KeepLast(
            std::num::NonZeroUsize::new(QUESTION_DEPTH).expect("QUESTION_DEPTH is not zero"),
        ),
        ..QosProfile::default()
    }
}

/// An answer or correction that was not let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// `answer` or `interjection`.
    pub what: &'static str,
    /// The task it was for.
    pub task_id: String,
    /// Who sent it.
    pub operator_id: String,
    /// Why it was refused.
    pub why: String,
}

/// Called (from the subscription's thread) for each refusal.
pub type OnRefused = Arc<dyn Fn(Refused) + Send + Sync>;

struct Route {
    interjections: InterjectionSender,
    answers: mpsc::UnboundedSender<Answer>,
    owner: Option<String>,
    on_refused: OnRefused,
}

struct Routes {
    tasks: HashMap<String, Route>,
    authority: Authority,
}

impl Routes {
    /// The task's route, when the `statement` (rebuilt from the message) verifies and its
    /// operator may speak to the task; refusals are reported.
    fn admit(
        &self,
        what: &'static str,
        task_id: &str,
        operator: &str,
        statement: Result<Statement, IdentityError>,
    ) -> Option<&Route> {
        let route = self.tasks.get(task_id)?;
        let admitted = statement.and_then(|s| {
            self.authority
                .admit(&s, route.owner.as_deref(), Some(FRESH_FOR))
        });
        match admitted {
            Ok(()) => Some(route),
            Err(why) => {
                warn!(task = %task_id, operator = %operator, "refused an {what}: {why}");
                (route.on_refused)(Refused {
                    what,
                    task_id: task_id.to_string(),
                    operator_id: operator.to_string(),
                    why: why.to_string(),
                });
                None
            }
        }
    }
}

/// The statement an answer makes: its operator answers `<task>/<question>` with its text.
fn answer_statement(msg: &Answer) -> Result<Statement, IdentityError> {
    Statement::from_proof(
        identity::action::ANSWER,
        &format!("{}/{}", msg.task_id, msg.question_id),
        &msg.text,
        &msg.operator_id,
        &msg.proof,
    )
}

/// The statement a correction makes.
fn interjection_statement(msg: &Interjection) -> Result<Statement, IdentityError> {
    Statement::from_proof(
        identity::action::INTERJECT,
        &msg.task_id,
        &msg.text,
        &msg.operator_id,
        &msg.proof,
    )
}

type QuestionPub = ZPub<Question, <Question as hiroz::msg::ZMessage>::Serdes>;

/// One expert's subscriptions and question publisher.
pub struct OperatorDesk {
    routes: Arc<Mutex<Routes>>,
    questions: QuestionPub,
    _interjections: ZSub<Interjection, (), <Interjection as hiroz::msg::ZMessage>::Serdes>,
    _answers: ZSub<Answer, (), <Answer as hiroz::msg::ZMessage>::Serdes>,
}

/// What one task receives from the operator.
pub struct TaskDesk {
    /// Corrections, read by the loop at its next boundary.
    pub interjections: InterjectionInbox,
    answers: tokio::sync::Mutex<mpsc::UnboundedReceiver<Answer>>,
    task_id: String,
    routes: Arc<Mutex<Routes>>,
}

impl OperatorDesk {
    /// Subscribes and declares the publisher on `node`. Who may speak to every task, and
    /// whose keys are registered, is `authority`'s.
    pub fn new(node: &ZNode, authority: Authority) -> Result<Self, ControlError> {
        let declare = |what: &'static str| {
            move |source| ControlError::Declare {
                what: what.to_string(),
                source,
            }
        };
        let routes = Arc::new(Mutex::new(Routes {
            tasks: HashMap::new(),
            authority,
        }));
        let r = routes.clone();
        let interjections = node
            .create_sub::<Interjection>(INTERJECTIONS)
            .build_with_callback(move |msg: Interjection| {
                let routes = r.lock().expect("operator routes lock");
                let statement = interjection_statement(&msg);
                if let Some(route) =
                    routes.admit("interjection", &msg.task_id, &msg.operator_id, statement)
                {
                    info!(task = %msg.task_id, operator = %msg.operator_id, "interjection received");
                    route.interjections.send(msg.text);
                }
            })
            .map_err(declare("subscription to /iron/interjections"))?;
        let r = routes.clone();
        let answers = node
            .create_sub::<Answer>(ANSWERS)
            .build_with_callback(move |msg: Answer| {
                let routes = r.lock().expect("operator routes lock");
                let statement = answer_statement(&msg);
                if let Some(route) =
                    routes.admit("answer", &msg.task_id, &msg.operator_id, statement)
                {
                    let _ = route.answers.send(msg);
                }
            })
            .map_err(declare("subscription to /iron/answers"))?;
        let questions = node
            .create_pub::<Question>(QUESTIONS)
            .with_qos(questions_qos())
            .build()
            .map_err(declare("publisher on /iron/questions"))?;
        Ok(Self {
            routes,
            questions,
            _interjections: interjections,
            _answers: answers,
        })
    }

    /// Starts receiving for `task_id`, owned by `owner`, until the returned desk is dropped;
    /// `on_refused` hears of each answer or correction refused.
    pub fn open(&self, task_id: &str, owner: Option<String>, on_refused: OnRefused) -> TaskDesk {
        let (sender, inbox) = interjection_channel();
        let (tx, rx) = mpsc::unbounded_channel();
        let mut routes = self.routes.lock().expect("operator routes lock");
        routes.tasks.insert(
            task_id.to_string(),
            Route {
                interjections: sender,
                answers: tx,
                owner: owner.filter(|o| !o.is_empty()),
                on_refused,
            },
        );
        TaskDesk {
            interjections: inbox,
            answers: tokio::sync::Mutex::new(rx),
            task_id: task_id.to_string(),
            routes: self.routes.clone(),
        }
    }

    /// Publishes a question for `task_id` from `expert`; returns its id.
    pub async fn ask(
        &self,
        task_id: &str,
        expert: &str,
        text: &str,
    ) -> Result<String, ControlError> {
        let question_id = uuid::Uuid::new_v4().to_string();
        let msg = Question {
            question_id: question_id.clone(),
            task_id: task_id.to_string(),
            expert: expert.to_string(),
            text: text.to_string(),
            choices_json: "[]".into(),
            asked: now(),
        };
        self.questions
            .async_publish(&msg)
            .await
            .map_err(|source| ControlError::Call {
                what: format!("publish on {QUESTIONS}"),
                source,
            })?;
        Ok(question_id)
    }
}

fn now() -> Time {
    let stamp = now_stamp();
    Time {
        sec: stamp.sec,
        nanosec: stamp.nanosec,
    }
}

type AnswerPub = ZPub<Answer, <Answer as hiroz::msg::ZMessage>::Serdes>;
type InterjectionPub = ZPub<Interjection, <Interjection as hiroz::msg::ZMessage>::Serdes>;

/// The operator's side: answers and corrections for running tasks, published only once an
/// expert listens (so none is dropped silently). Used by `iron task answer|interject` and the
/// console.
pub struct OperatorVoice {
    answers: AnswerPub,
    interjections: InterjectionPub,
}

impl OperatorVoice {
    /// Declares the publishers on `node`.
    pub fn new(node: &ZNode) -> Result<Self, ControlError> {
        let declare = |what: &'static str| {
            move |source| ControlError::Declare {
                what: what.to_string(),
                source,
            }
        };
        Ok(Self {
            answers: node
                .create_pub::<Answer>(ANSWERS)
                .build()
                .map_err(declare("publisher on /iron/answers"))?,
            interjections: node
                .create_pub::<Interjection>(INTERJECTIONS)
                .build()
                .map_err(declare("publisher on /iron/interjections"))?,
        })
    }

    /// Answers `question_id` of `task_id` as `operator`, signed with its key.
    pub async fn answer(
        &self,
        task_id: &str,
        question_id: &str,
        operator: &OperatorKey,
        text: &str,
        timeout: std::time::Duration,
    ) -> Result<(), ControlError> {
        let statement = operator.sign(
            identity::action::ANSWER,
            &format!("{task_id}/{question_id}"),
            text,
        );
        let msg = Answer {
            question_id: question_id.to_string(),
            task_id: task_id.to_string(),
            operator_id: operator.name().to_string(),
            text: text.to_string(),
            proof: statement.proof(),
            answered: now(),
        };
        publish_heard(&self.answers, ANSWERS, &msg, timeout).await
    }

    /// Sends `task_id` a correction from `operator`, signed with its key.
    pub async fn interject(
        &self,
        task_id: &str,
        operator: &OperatorKey,
        text: &str,
        timeout: std::time::Duration,
    ) -> Result<(), ControlError> {
        let statement = operator.sign(identity::action::INTERJECT, task_id, text);
        let msg = Interjection {
            task_id: task_id.to_string(),
            operator_id: operator.name().to_string(),
            text: text.to_string(),
            proof: statement.proof(),
            sent: now(),
        };
        publish_heard(&self.interjections, INTERJECTIONS, &msg, timeout).await
    }
}

/// Publishes `msg` on `topic` once somebody (an expert) listens; refuses to drop it silently.
async fn publish_heard<M>(
    publisher: &ZPub<M, M::Serdes>,
    topic: &str,
    msg: &M,
    timeout: std::time::Duration,
) -> Result<(), ControlError>
where
    M: hiroz::msg::ZMessage + hiroz::WithTypeInfo + Send + Sync + 'static,
    for<'a> M::Serdes: hiroz::msg::ZSerializer<Input<'a> = &'a M>,
{
    if !publisher.wait_for_subscription(1, timeout).await {
        return Err(ControlError::NoServer {
            what: format!("{topic} (no expert listens: is the task still running?)"),
        });
    }
    publisher
        .async_publish(msg)
        .await
        .map_err(|source| ControlError::Call {
            what: format!("publish on {topic}"),
            source,
        })
}

impl TaskDesk {
    /// The next answer to `question_id` (or to no question in particular). `None` when the
    /// desk is closed.
    pub async fn answer(&self, question_id: &str) -> Option<Answer> {
        let mut answers = self.answers.lock().await;
        while let Some(answer) = answers.recv().await {
            if answer.question_id.is_empty() || answer.question_id == question_id {
                return Some(answer);
            }
            warn!(task = %self.task_id, question = %answer.question_id,
                "dropped an answer to a question this task is not asking");
        }
        None
    }
}

impl Drop for TaskDesk {
    fn drop(&mut self) {
        let mut routes = self.routes.lock().expect("operator routes lock");
        routes.tasks.remove(&self.task_id);
    }
}
