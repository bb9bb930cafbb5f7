//! `iron operator …`: the people whose signed actions the system takes
//! ([`crate::core::identity`]). `add` makes a key on this machine and registers its public half
//! with the deployment (the state directory of the configuration in force); `list` shows who
//! is registered, listed in `operators:`, and has a key here; `remove` unregisters; `sign`
//! prints a proof for a ROS 2 user who calls a service with the stock tools.

use clap::Subcommand;

use super::CliError;
use crate::core::identity::{self, OperatorKey, Registry, Statement, action};

/// Signs `action` on `subject` with `decision` as the CLI's operator (`operator`, else
/// IRON_OPERATOR, else the only key here). What acts on it checks it before writing anything,
/// so a person hears at once when it would not be taken.
pub(super) fn signed(
    operator: Option<String>,
    action: &str,
    subject: &str,
    decision: &str,
) -> Result<Statement, CliError> {
    Ok(OperatorKey::for_cli(operator.as_deref())?.sign(action, subject, decision))
}

/// Operators and their keys.
#[derive(Debug, Subcommand)]
pub enum OperatorCommand {
    /// Make NAME's key on this machine (mode 0600 in a 0700 directory:
    /// `$XDG_CONFIG_HOME/iron/operators/NAME.key`, or IRON_OPERATOR_KEYS) and register its
    /// public key with this deployment (`<state_dir>/operators/NAME.pub`). A key already here
    /// is kept and registered again. Actions are taken from NAME when NAME is in the
    /// configuration's `operators:` (any registered operator when that list is empty), or on
    /// the tasks NAME started.
    Add {
        /// The operator's name (letters, digits, `.`, `_`, `-`).
        name: String,
    },
    /// Who is registered with this deployment, listed in `operators:`, and has a key here.
    List,
    /// Unregister NAME: nothing NAME signed is taken from now on, including decisions on the
    /// log not yet acted on. The private key on this machine is left alone.
    Remove {
        /// The operator.
        name: String,
    },
    /// Print the proof for one action, for a service called with the stock ROS 2 tools, e.g.
    /// `iron operator sign hunks.decide "<id> <id>" approved` for `ros2 service call
    /// /iron/workspace/decide_hunks … proof: <printed>`. Valid for five minutes.
    Sign {
        /// `hunks.decide`, `task.answer` or `task.interject`.
        action: String,
        /// What it is about: the hunk ids separated by one space, `<task>/<question>`, or the
        /// task.
        subject: String,
        /// `approved` or `rejected`, or the answer's or correction's text.
        decision: String,
        /// Who signs (default: IRON_OPERATOR, else the only key on this machine).
        #[arg(long)]
        operator: Option<String>,
    },
}

/// Runs `command`.
pub fn run(command: OperatorCommand) -> Result<(), CliError> {
    let config = super::load_config()?;
    match command {
        OperatorCommand::Add { name } => {
            let dir = identity::key_dir()?;
            let (key, made) = match OperatorKey::create(&dir, &name) {
                Ok(key) => (key, true),
                Err(identity::IdentityError::Exists { .. }) => {
                    (OperatorKey::load(&dir, &name)?, false)
                }
                Err(e) => return Err(e.into()),
            };
            let registered = Registry::register(&config.state_dir, &key)?;
            let path = OperatorKey::path(&dir, &name);
            println!(
                "operator {name}: {} key {} (private: keep it to yourself); registered {}",
                if made { "new" } else { "existing" },
                path.display(),
                registered.display()
            );
            if !config.operators.is_empty() && !config.operators.contains(&name) {
                eprintln!(
                    "note: {name} is not in the configuration's `operators:` ({}); only tasks \
                     {name} started take {name}'s actions until it is",
                    config.operators.join(", ")
                );
            }
            Ok(())
        }
        OperatorCommand::List => {
            let registry = Registry::load(&config.state_dir);
            let dir = identity::key_dir()?;
            let mut names: std::collections::BTreeSet<String> =
                registry.names().map(str::to_string).collect();
            names.extend(config.operators.iter().cloned());
            if names.is_empty() {
                eprintln!(
                    "no operators registered in {} (`iron operator add NAME`)",
                    Registry::dir(&config.state_dir).display()
                );
            }
            let listed_all = config.operators.is_empty();
            for name in names {
                let registered = registry.names().any(|n| n == name);
                let listed = listed_all || config.operators.contains(&name);
                let here = OperatorKey::path(&dir, &name).exists();
                println!(
                    "{name}\t{}\t{}\t{}",
                    if registered {
                        "registered"
                    } else {
                        "NOT registered"
                    },
                    if listed { "operator" } else { "owner only" },
                    if here { "key here" } else { "no key here" }
                );
            }
            Ok(())
        }
        OperatorCommand::Remove { name } => {
            if Registry::unregister(&config.state_dir, &name)? {
                println!("operator {name}: unregistered");
                Ok(())
            } else {
                Err(CliError::Failed(format!(
                    "operator {name} is not registered in {}",
                    Registry::dir(&config.state_dir).display()
                )))
            }
        }
        OperatorCommand::Sign {
            action: what,
            subject,
            decision,
            operator,
        } => {
            if ![action::HUNKS, action::ANSWER, action::INTERJECT].contains(&what.as_str()) {
                return Err(CliError::Failed(format!(
                    "{what:?}: sign one of {}, {}, {}",
                    action::HUNKS,
                    action::ANSWER,
                    action::INTERJECT
                )));
            }
            let key = OperatorKey::for_cli(operator.as_deref())?;
            println!("{}", key.sign(&what, &subject, &decision).proof());
            Ok(())
        }
    }
}
