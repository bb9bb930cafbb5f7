//! NATS subject matching (`*` one token, `>` one or more trailing tokens), shared by the
//! embedded backend so that both backends route and filter alike.

/// True when `subject` matches `pattern`.
pub fn matches(pattern: &str, subject: &str) -> bool {
    let mut subject_tokens = subject.split('.');
    for p in pattern.split('.') {
        match p {
            ">" => return subject_tokens.next().is_some(),
            "*" => {
                if subject_tokens.next().is_none() {
                    return false;
                }
            }
            literal => {
                if subject_tokens.next() != Some(literal) {
                    return false;
                }
            }
        }
    }
    subject_tokens.next().is_none()
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn wildcards_follow_nats_rules() {
        assert!(matches("mem.>", "mem.acme.facts"));
        assert!(!matches("mem.>", "mem"));
        assert!(!matches("mem.>", "jobs.x"));
        assert!(matches("mem.*.facts", "mem.acme.facts"));
        assert!(!matches("mem.*.facts", "mem.acme.facts.x"));
        assert!(matches("mem.acme", "mem.acme"));
        assert!(!matches("mem.acme", "mem.acme.x"));
    }
}
