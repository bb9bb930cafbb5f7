//! Everyday phrasings of what the experts do, mapped onto the words the experts' descriptions
//! use for it. People say "look over my diff" or "push it out"; the catalog says "reviews a
//! change" and "delivers". When an instruction contains a cue, the concept's words join the
//! instruction's terms and are scored against the catalog like any other term, so a concept
//! helps exactly the experts whose own text uses those words, and a catalog that does not use
//! them is not affected.
//!
//! Every cue is a general English synonym or paraphrase of a word family, not a phrase taken
//! from any particular request. Cues are matched on stemmed words, so one inflection stands for
//! all (`send` also finds `sent` and `sending`); `*` stands for up to three words in between
//! ("push * out" finds "push the approved bulletin out"). Words under a negation never match.

use super::lexical::{Word, words};

/// What the software concept stands for; code-like tokens in an instruction add it too.
pub(crate) const SOFTWARE: &str = "code codebase";

/// What a question stands for: the experts whose descriptions say they take questions.
pub(crate) const QUESTION: &str = "general questions";

/// One concept: its cues and the catalog words it stands for.
struct Concept {
    /// Lines of comma-separated cues.
    cues: &'static [&'static str],
    /// The catalog's words for it.
    means: &'static str,
    /// It names a team's field (software, journalism) rather than one member's task: it says
    /// which mesh, not which expert of it.
    team: bool,
}

/// The table, grouped by the description words each concept leads to. Each concept names as
/// few catalog words as say it, so that no concept outweighs another by its length.
const CONCEPTS: &[Concept] = &[
    // -- General help: "general questions, quick lookups, explanations, planning help".
    Concept {
        // Asking for an explanation or advice on something known.
        cues: &[
            "explain, what is, what are, what does * mean, meaning of, define, definition",
            "difference between, in simple terms, in plain english, eli5, tell me about, how does",
            "how do i, why does, why do, tips, advice, best way, help me understand, recommend",
            "suggest, ideas, any idea",
        ],
        means: "explanations",
        team: false,
    },
    Concept {
        // Quick facts: the time and date, conversions, distances.
        cues: &[
            "what time, time zone, timezone, time difference, convert, conversion, how long",
            "how far, how old, what day, what date, weather, spell, translate, calculate",
            "quick question, look up",
        ],
        means: "lookups",
        team: false,
    },
    Concept {
        // Personal organisation.
        cues: &[
            "plan, schedule, organise, organize, agenda, itinerary, calendar, to-do list, todo",
            "checklist, prioritise, prioritize, remind me, appointment",
        ],
        means: "planning",
        team: false,
    },
    // -- Research: "investigates questions that need several sources, recent facts,
    //    comparisons or numbers, and reports findings with their evidence and confidence".
    Concept {
        // Investigating.
        cues: &[
            "research, look into, dig into, dig up, find out, investigate, study, studies",
            "literature, scientific, academic, peer-reviewed, meta-analysis, background",
            "history of, survey, look for evidence, research papers, clinical trials",
        ],
        means: "investigates research",
        team: false,
    },
    Concept {
        // Comparing.
        cues: &[
            "compare, compared, comparable, versus, vs, pros and cons, weigh up, weigh, trade-off",
            "tradeoff, which is better, side by side",
        ],
        means: "comparisons",
        team: false,
    },
    Concept {
        // Quantities and how they move.
        cues: &[
            "statistics, dataset, figures, price, prices, cost, costs, median, average, percentage",
            "percent, share of, trend, growth, decline, over the past, over time, per year",
            "per month, historical",
        ],
        means: "numbers",
        team: false,
    },
    Concept {
        // Up-to-date facts.
        cues: &["current, currently, recent, recently, up to date, nowadays, these days"],
        means: "recent",
        team: false,
    },
    Concept {
        // Where facts come from.
        cues: &[
            "cite, citations, references, backed up, several sources, multiple sources",
            "different sources",
        ],
        means: "several sources",
        team: false,
    },
    Concept {
        // How much to believe it (researchers and verifiers both report it).
        cues: &[
            "how sure, how confident, how certain, how strong, how reliable, how robust, proof",
        ],
        means: "confidence",
        team: false,
    },
    // -- Writing: "drafts and edits reports, summaries, letters, documentation and other
    //    finished text from material the team has gathered".
    Concept {
        // Producing a text.
        cues: &["draft, write up, compose, put together, type up"],
        means: "drafts",
        team: false,
    },
    Concept {
        // Kinds of finished document.
        cues: &[
            "letter, email, memo, note to, message to, summary, summarise, summarize, recap",
            "overview, one-pager, briefing, guide, handbook, documentation, docs, readme, faq",
            "article, blog post, essay, speech, newsletter, proposal, invitation, document",
            "user manual",
        ],
        means: "documents finished",
        team: false,
    },
    Concept {
        // Improving a text.
        cues: &[
            "edit, polish, proofread, tighten, shorten, rewrite, reword, rephrase, copyedit",
            "make * shorter, make * clearer, more formal, less formal, friendlier, tone, wording",
        ],
        means: "edits",
        team: false,
    },
    // -- Software: "implements features and fixes bugs", "reviews a change", "writes and
    //    runs tests". Common software-engineering vocabulary signals code work (words with a
    //    common everyday sense, such as "client" or "flag", are left out).
    Concept {
        cues: &[
            "code, codebase, source code, cli, api, endpoint, http, https, json, yaml, toml, xml",
            "sql, database, schema, function, module, dependency, dependencies, compiler, compile",
            "build, ci, pipeline, repo, repository, branch, commit, merge, pull request, pr, diff",
            "patch, staged, script, regex, parser, config, configuration, environment variable",
            "env var, command line, server, socket, timeout, retry, cache, async, null, segfault",
            "stack trace, unit test, integration test, test suite, lint, linter, deploy, docker",
            "frontend, backend, css, html, javascript, python, rust, typescript, login",
            "authentication, refactor, bug, integer, struct, enum, variable, runtime, memory leak",
            "release build",
        ],
        means: SOFTWARE,
        team: true,
    },
    Concept {
        // Making a change to code.
        cues: &[
            "implement, add support, add * option, add * feature, new feature, refactor, rename",
            "port * to, optimise, optimize, speed up",
        ],
        means: "implements features",
        team: false,
    },
    Concept {
        // Something broken (the engineer fixes bugs, the tester reproduces them).
        cues: &[
            "bug, stack trace, doesnt work, not working, isnt working, stopped working, wont compile",
            "doesnt compile, wont build, build fails, build failure, build is broken, broken build",
            "traceback",
        ],
        means: "bugs",
        team: false,
    },
    Concept {
        // Making it work again.
        cues: &["get * working, make * work, debug, bugfix, hotfix"],
        means: "fixes",
        team: false,
    },
    Concept {
        // Reading someone else's change and judging it.
        cues: &[
            "review, look over, look at * diff, go over, read through, read over, check over",
            "second pair of eyes, fresh eyes, set of eyes, second opinion, sanity check",
            "feedback on, critique, code review, approve, approval, lgtm, safe to merge",
            "ready to merge, ok to merge, vulnerability, vulnerabilities, exploit, injection",
            "nitpick",
        ],
        means: "reviews comments",
        team: false,
    },
    Concept {
        // Exercising code and reporting outcomes.
        cues: &[
            "test, tests, testing, test suite, unit tests, regressed, regressions, flaky, flake",
            "intermittent, intermittently, edge case, edge cases, corner case, fuzz, stress test",
            "invalid input, malformed, qa, test coverage, code coverage, regression test",
        ],
        means: "tests passed failed",
        team: false,
    },
    Concept {
        // Making a reported problem happen on purpose.
        cues: &["reproduce, repro, reproducible, reproduces, minimal example"],
        means: "reproduces bugs",
        team: false,
    },
    // -- Newsroom: "watches official statements and news wires", "cross-checks a claim",
    //    "writes and revises news bulletins and corrections", "delivers it".
    Concept {
        // The journalism trade: who reports and how.
        cues: &[
            "outlet, outlets, wire, wires, news agency, press release, newspaper, reporter",
            "journalist, story, stories, spokesperson, official statement, authorities, government",
            "ministry, minister, police, announced, reported, reportedly, allegedly, rumour, rumor",
            "news, breaking news, the press",
        ],
        means: "news",
        team: true,
    },
    Concept {
        // Is it so?
        cues: &[
            "is it true, is that true, is this true, true that, really true, fact-check",
            "fact check, fact checking, corroborate, corroborated, corroboration, cross check",
            "cross-check, credible, trustworthy, debunk, hoax, conflicting, contradict",
            "contradicts, verify, confirm whether, confirm that, confirm if, can we confirm",
        ],
        means: "cross-checks claim verdict",
        team: false,
    },
    Concept {
        // Keeping watch for anything new.
        cues: &[
            "keep an eye on, keep track, watch, watch for, monitor, scan, anything new, whats new",
            "anything fresh, look out for, alert me, notify me, let me know if, let me know when",
            "heads up, feeds, feed, keep checking, stay on top, triage, worth checking, any fresh",
        ],
        means: "watches new claims",
        team: false,
    },
    Concept {
        // The bulletin itself.
        cues: &["bulletin, bulletins, headline, correction, retraction, news item"],
        means: "bulletins",
        team: false,
    },
    Concept {
        // Sending it out.
        cues: &[
            "send, publish, push * out, put * out, go out, send * out, distribute, broadcast",
            "deliver, dispatch, circulate, post to, post on, resend, channel, destination",
        ],
        means: "delivers sent destination",
        team: false,
    },
    Concept {
        // Ready to go.
        cues: &["final, approved, signed off, ready to go, finished, finalised, finalized"],
        means: "finished",
        team: false,
    },
];

/// The table, stemmed once.
#[derive(Debug, Clone)]
pub(crate) struct Concepts {
    /// Per concept: its cues as stemmed words (`*` kept), what it stands for, and whether it
    /// is a team concept.
    table: Vec<(Vec<Vec<String>>, &'static str, bool)>,
}

/// The cues of `c`, one by one.
fn cues_of(c: &Concept) -> impl Iterator<Item = &'static str> {
    c.cues
        .iter()
        .flat_map(|line| line.split(','))
        .map(str::trim)
        .filter(|cue| !cue.is_empty())
}

/// How many words a `*` in a cue may stand for.
const GAP: usize = 3;

impl Concepts {
    /// Stems the table.
    pub(crate) fn new() -> Self {
        let table = CONCEPTS
            .iter()
            .map(|c| {
                let cues = cues_of(c)
                    .map(|cue| {
                        cue.split(" * ")
                            .enumerate()
                            .flat_map(|(i, part)| {
                                let gap = (i > 0).then(|| "*".to_string());
                                gap.into_iter()
                                    .chain(words(part).into_iter().map(|w| w.stem))
                            })
                            .collect()
                    })
                    .collect();
                (cues, c.means, c.team)
            })
            .collect();
        Self { table }
    }

    /// The catalog words of every concept with a cue in `text` (once per concept) with whether
    /// it is a team concept, and which words of `text` a cue accounted for.
    pub(crate) fn found(&self, text: &[Word]) -> (Vec<(&'static str, bool)>, Vec<bool>) {
        let mut used = vec![false; text.len()];
        let mut means = Vec::new();
        for (cues, m, team) in &self.table {
            let mut hit = false;
            for cue in cues {
                for start in 0..text.len() {
                    if let Some(end) = match_at(cue, text, start, text[start].clause) {
                        hit = true;
                        used[start..end].iter_mut().for_each(|u| *u = true);
                    }
                }
            }
            if hit {
                means.push((*m, *team));
            }
        }
        (means, used)
    }
}

/// Where a match of `cue` starting at `text[at]` ends (exclusive): inside one clause, and with
/// no word under a negation unless the cue itself holds the negation ("not working"). The
/// shortest gap wins.
fn match_at(cue: &[String], text: &[Word], at: usize, clause: usize) -> Option<usize> {
    match_from(cue, text, at, clause, false)
}

fn match_from(
    cue: &[String],
    text: &[Word],
    at: usize,
    clause: usize,
    negation_in_cue: bool,
) -> Option<usize> {
    let Some((first, rest)) = cue.split_first() else {
        return Some(at);
    };
    if first == "*" {
        return (0..=GAP).find_map(|skip| {
            let next = at + skip;
            if next >= text.len() || text[at..next].iter().any(|w| w.clause != clause) {
                return None;
            }
            match_from(rest, text, next, clause, negation_in_cue)
        });
    }
    match text.get(at) {
        Some(w) if w.clause == clause && (!w.negated || negation_in_cue) && &w.stem == first => {
            match_from(rest, text, at + 1, clause, negation_in_cue || w.negator)
        }
        _ => None,
    }
}

/// The catalog words of the concepts `text` mentions (convenience for tests).
#[cfg(test)]
fn found_in(text: &str) -> Vec<String> {
    Concepts::new()
        .found(&words(text))
        .0
        .into_iter()
        .map(|(m, _)| m.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cues_match_across_inflections_gaps_and_not_under_negation() {
        assert!(found_in("can you look over my diff").contains(&"reviews comments".into()));
        assert!(found_in("it was sent yesterday").contains(&"delivers sent destination".into()));
        assert!(
            found_in("push the approved bulletin out")
                .contains(&"delivers sent destination".into())
        );
        assert!(!found_in("don't debug anything yet").contains(&"fixes".into()));
        assert!(found_in("the login is not working").contains(&"bugs".into()));
        assert!(found_in("it won't compile").contains(&"bugs".into()));
        assert!(!found_in("push. out").contains(&"delivers sent destination".into()));
    }

    #[test]
    fn the_table_is_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for c in CONCEPTS {
            assert!(!c.cues.is_empty() && !c.means.is_empty());
            for cue in cues_of(c) {
                assert_eq!(cue.to_lowercase(), cue, "cues are lower-case");
                assert!(!cue.starts_with('*') && !cue.ends_with('*'), "{cue}");
                assert!(seen.insert((c.means, cue)), "{cue} twice");
            }
        }
    }
}
