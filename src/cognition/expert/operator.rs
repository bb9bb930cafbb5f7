//! The operator's side of a running task, over ROS 2 topics every expert shares:
//!
//! | topic | type | who publishes |
//! |---|---|---|
//! | `/iron/interjections` | `iron/msg/Interjection` | an operator (`iron task interject`, `ros2 topic pub`) |
//! | `/iron/questions` | `iron/msg/Question` | the expert whose model called `ask_operator` |
//! | `/iron/answers` | `iron/msg/Answer` | an operator (`iron task answer`, `ros2 topic pub`) |
//!
//! Each expert keeps what arrives for its own tasks (by `task_id`) and ignores the rest.
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

#[derive(Default)]
struct Routes {
    interjections: HashMap<String, InterjectionSender>,
    answers: HashMap<String, mpsc::UnboundedSender<Answer>>,
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
    /// Subscribes and declares the publisher on `node`.
    pub fn new(node: &ZNode) -> Result<Self, ControlError> {
        let declare = |what: &'static str| {
            move |source| ControlError::Declare {
                what: what.to_string(),
                source,
            }
        };
        let routes: Arc<Mutex<Routes>> = Arc::default();
        let r = routes.clone();
        let interjections = node
            .create_sub::<Interjection>(INTERJECTIONS)
            .build_with_callback(move |msg: Interjection| {
                let routes = r.lock().expect("operator routes lock");
                if let Some(tx) = routes.interjections.get(&msg.task_id) {
                    info!(task = %msg.task_id, operator = %msg.operator_id, "interjection received");
                    tx.send(msg.text);
                }
            })
            .map_err(declare("subscription to /iron/interjections"))?;
        let r = routes.clone();
        let answers = node
            .create_sub::<Answer>(ANSWERS)
            .build_with_callback(move |msg: Answer| {
                let routes = r.lock().expect("operator routes lock");
                if let Some(tx) = routes.answers.get(&msg.task_id) {
                    let _ = tx.send(msg);
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

    /// Starts receiving for `task_id`, until the returned desk is dropped.
    pub fn open(&self, task_id: &str) -> TaskDesk {
        let (sender, inbox) = interjection_channel();
        let (tx, rx) = mpsc::unbounded_channel();
        let mut routes = self.routes.lock().expect("operator routes lock");
        routes.interjections.insert(task_id.to_string(), sender);
        routes.answers.insert(task_id.to_string(), tx);
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
        let stamp = now_stamp();
        let msg = Question {
            question_id: question_id.clone(),
            task_id: task_id.to_string(),
            expert: expert.to_string(),
            text: text.to_string(),
            choices_json: "[]".into(),
            asked: Time {
                sec: stamp.sec,
                nanosec: stamp.nanosec,
            },
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
        routes.interjections.remove(&self.task_id);
        routes.answers.remove(&self.task_id);
    }
}
