//! Tests of the claims module: the planted fixture, order independence, stable ids, and the
//! safety rule.

use super::*;
use Stance::{Denies, Supports};
use Status::{Confirmed, Contradicted, SingleSource};

const FIXTURE: &str = include_str!("../../../../tests/fixtures/newsroom/planted.json");

#[derive(Deserialize)]
struct Fixture {
    reports: Vec<Report>,
    expect: Vec<Expected>,
}

#[derive(Deserialize)]
struct Expected {
    case: String,
    report_ids: BTreeSet<String>,
    status: Status,
}

fn fixture() -> Fixture {
    serde_json::from_str(FIXTURE).expect("the fixture parses")
}

/// Reports `a`, `b`, ... ten minutes apart, each from "owner | title | summary".
fn batch<S: AsRef<str>>(lines: &[S]) -> Vec<Report> {
    let report = |(i, line): (usize, &S)| {
        let mut parts = line.as_ref().split(" | ").map(str::to_string);
        let mut next = || parts.next().unwrap_or_default();
        let (owner, title, summary) = (next(), next(), next());
        let (id, outlet) = (char::from(b'a' + i as u8).to_string(), owner.to_uppercase());
        let published = Some(format!("2026-11-30T06:{i}0:00Z"));
        let (url, source) = (String::new(), String::new());
        Report {
            id,
            title,
            summary,
            url,
            published,
            outlet,
            owner,
            source,
        }
    };
    lines.iter().enumerate().map(report).collect()
}

fn ids(verdict: &Verdict) -> BTreeSet<String> {
    verdict
        .supporting
        .iter()
        .chain(&verdict.denying)
        .cloned()
        .collect()
}

fn statuses(reports: &[Report]) -> Vec<Status> {
    newsroom(reports).iter().map(|v| v.status).collect()
}

#[test]
fn fixture_claims_match_expectations() {
    let f = fixture();
    let verdicts = newsroom(&f.reports);
    for e in &f.expect {
        let got = verdicts.iter().find(|v| ids(v) == e.report_ids);
        let got = got.unwrap_or_else(|| panic!("{}: not one claim: {verdicts:#?}", e.case));
        assert_eq!(got.status, e.status, "{}: {got:?}", e.case);
    }
    assert_eq!(verdicts.len(), f.expect.len(), "{verdicts:#?}");
}

#[test]
fn confirmed_precision_is_one_on_the_fixture() {
    let f = fixture();
    let expected = f.expect.iter().filter(|e| e.status == Confirmed);
    let expected: Vec<&BTreeSet<String>> = expected.map(|e| &e.report_ids).collect();
    let verdicts = newsroom(&f.reports);
    let confirmed = verdicts.iter().filter(|v| v.status == Confirmed);
    let confirmed: Vec<BTreeSet<String>> = confirmed.map(ids).collect();
    for c in &confirmed {
        assert!(expected.contains(&c), "false confirmation of {c:?}");
    }
    assert_eq!(confirmed.len(), expected.len(), "recall");
}

#[test]
fn output_does_not_depend_on_input_order() {
    let f = fixture();
    let (claims, verdicts) = (group(&f.reports), newsroom(&f.reports));
    let mut seed = 0x2545_f491_u64;
    for round in 0..8 {
        let mut shuffled = f.reports.clone();
        shuffled.reverse();
        for i in (1..shuffled.len()).rev().filter(|_| round > 0) {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            shuffled.swap(i, (seed >> 33) as usize % (i + 1));
        }
        assert_eq!(group(&shuffled), claims, "round {round}");
        assert_eq!(newsroom(&shuffled), verdicts, "round {round}");
    }
    let mut doubled = f.reports.clone();
    doubled.extend(f.reports.iter().rev().cloned());
    assert_eq!(group(&doubled), claims, "a repeated id counts once");
    let last = &claims.last().expect("claims").reports[0];
    assert_eq!(last.id, "pm-16", "undated reports sort last");
}

#[test]
fn claim_ids_follow_the_anchor() {
    let f = fixture();
    let first = |reports: &[Report]| group(reports).swap_remove(0);
    let claim = first(&f.reports);
    assert_eq!((claim.id.len(), &claim.id), (18, &claim_id("pm-01")));
    let text = "Harbour bridge closed to traffic for structural inspection";
    assert_eq!(claim.text, text);
    let mut earlier = f.reports.clone();
    earlier.retain(|r| r.id != "pm-20");
    assert_eq!(first(&earlier).id, claim.id, "a later report keeps the id");
    let denial = batch(&["council | Council denies harbour bridge closure"]).remove(0);
    let published = Some("2026-11-30T05:00:00Z".to_string());
    let mut denied_first = f.reports.clone();
    denied_first.push(Report {
        id: "d".into(),
        published,
        ..denial
    });
    let claim = first(&denied_first);
    assert_eq!(
        claim.id,
        claim_id("pm-01"),
        "the anchor is the earliest non-denier"
    );
    assert_eq!(
        (claim.reports[0].id.as_str(), claim.reports[0].stance),
        ("d", Denies)
    );
}

#[test]
fn denials_and_opposite_states_are_never_confirmed() {
    let deniers = [
        "authority | Harbour Authority update on the harbour bridge inspection \
            | The bridge has not been closed; traffic is flowing as usual.",
        "authority | Authority: harbour bridge remains open",
        "authority | Bridge closure reports 'untrue', says authority",
        "authority | Harbour bridge will not close, authority says",
    ];
    for denier in deniers {
        let closed = "wire | Harbour bridge closed for inspection";
        let reports = batch(&[closed, "radio | Harbour bridge shut for inspection", denier]);
        let verdicts = newsroom(&reports);
        assert_eq!(verdicts.len(), 1, "{denier}: {verdicts:#?}");
        let (status, denying) = (verdicts[0].status, &verdicts[0].denying);
        assert_eq!(
            (status, denying.as_slice()),
            (Contradicted, &["c".to_string()][..])
        );
    }
}

#[test]
fn a_later_state_is_its_own_claim_and_withholds_confirmation() {
    let closed = [
        "wire | Harbour bridge closed for inspection",
        "radio | Harbour bridge shut for inspection",
    ];
    for later in [
        "council | Harbour bridge reopened after inspection",
        "council | Harbour bridge open again",
        "council | Harbour bridge carries traffic after a closure",
    ] {
        let reports = batch(&[closed[0], closed[1], later]);
        let verdicts = newsroom(&reports);
        assert_eq!(verdicts.len(), 2, "{later}: {verdicts:#?}");
        let closure = holding(&verdicts, "a");
        assert_eq!(closure.supporting, ["a", "b"], "{later}");
        assert_eq!(
            (closure.status, closure.denying.as_slice()),
            (Contradicted, &["c".to_string()][..]),
            "{later}"
        );
        assert_ne!(holding(&verdicts, "c").status, Confirmed, "{later}");
    }
    // Running as usual, with no word of a change, still denies the closure.
    let usual = batch(&[
        closed[0],
        closed[1],
        "council | Harbour bridge traffic running as usual",
    ]);
    assert_eq!(newsroom(&usual).len(), 1);
}

#[test]
fn cross_check_rereads_stances() {
    let reports = fixture().reports;
    let claim = group(&reports)
        .into_iter()
        .find(|c| c.id == claim_id("pm-09"));
    let mut claim = claim.expect("the schools claim");
    claim.reports.iter_mut().for_each(|r| r.stance = Supports);
    claim.reports.push(claim.reports[0].clone()); // listed twice
    let verdict = cross_check(&claim, &reports);
    assert_eq!(verdict.status, Contradicted);
    assert_eq!(
        (verdict.supporting, verdict.denying),
        (vec!["pm-09".into()], vec!["pm-10".into()])
    );
}

#[test]
fn opposite_states_contradict_even_when_the_anchor_has_none() {
    let reports = batch(&[
        "one | Harbour bridge inspection under way",
        "two | Harbour bridge closed for inspection",
        "three | Harbour bridge reopened after inspection",
    ]);
    let sorted = sorted_unique(&reports);
    let features = features_of(&sorted);
    let (_, claim) = make_claim(&[0, 1, 2], &sorted, &features);
    let stances = Vec::from_iter(claim.reports.iter().map(|r| r.stance));
    assert_eq!(stances, [Supports, Supports, Denies]);
    assert_eq!(cross_check(&claim, &reports).status, Contradicted);
}

#[test]
fn like_events_elsewhere_or_later_stay_apart() {
    let pairs = [
        "Fire at Eastside primary school | Fire at Westside primary school",
        "School closed after flooding | School closed after fire",
        "Bus drivers strike over pay | Train drivers strike over pay",
        "Strike halts container port | Strike hits airport check-in staff",
    ];
    for pair in pairs {
        let (x, y) = pair.split_once(" | ").expect("a pair");
        let reports = batch(&[format!("one | {x}"), format!("two | {y}")]);
        assert_eq!(statuses(&reports), [SingleSource, SingleSource], "{pair}");
    }
    let title = "Northgate tunnel closed after flooding";
    let mut reports = batch(&[format!("one | {title}"), format!("two | {title}")]);
    assert_eq!(statuses(&reports), [Confirmed]);
    reports[1].published = Some("2026-12-04T06:00:00Z".into());
    assert_eq!(
        statuses(&reports),
        [SingleSource, SingleSource],
        "four days apart"
    );
}

/// Two places' reports on one template, with other figures, are two events, not rival accounts
/// of one, even in a batch that writes every word of their names in lower case elsewhere (so
/// it confirms none of them as a name) or confirms only their common word ("Street"). A
/// name both carry whole is one subject.
#[test]
fn one_template_at_two_places_is_no_contradiction() {
    let pairs = [
        "Quay Street bridge closed for 3 hours | North Harbour Road bridge closed for 5 hours",
        "Quay Street depot fire: 4 hurt | Weir Street depot fire: 6 hurt",
    ];
    let lower = "three | Crews check every quay, street, north harbour road and weir | ";
    for pair in pairs {
        let (x, y) = pair.split_once(" | ").expect("a pair");
        for context in [&[][..], &[lower][..]] {
            let mut lines = vec![format!("one | {x}"), format!("two | {y}")];
            lines.extend(context.iter().map(|c| c.to_string()));
            let verdicts = newsroom(&batch(&lines));
            let contradicted = verdicts.iter().filter(|v| v.status == Contradicted);
            assert_eq!(
                contradicted.count(),
                0,
                "{pair}, {context:?}: {verdicts:#?}"
            );
        }
    }
    // A name both headlines carry whole is one subject, whoever else they name.
    let rivals = batch(&[
        "one | Mara Quill wins Heron Medal for poetry",
        "two | Heron Medal for poetry goes to Idris Vane",
    ]);
    assert_eq!(statuses(&rivals), [Contradicted, Contradicted]);
}

#[test]
fn paraphrases_from_two_owners_confirm() {
    let pairs = [
        "Storm forces evacuation of Westbay homes | Westbay residents evacuated as storm hits",
        "Mayor resigns over expenses row | Portmere mayor quits amid expenses scandal",
        "Earthquake shakes Portmere | Quake felt across Portmere",
    ];
    for pair in pairs {
        let (x, y) = pair.split_once(" | ").expect("a pair");
        let reports = batch(&[format!("one | {x}"), format!("two | {y}")]);
        assert_eq!(statuses(&reports), [Confirmed], "{pair}");
    }
}

fn confirmed(supporting: &[&str], denying: &[&str]) -> Verdict {
    let strings = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect();
    let (claim, text, reason) = ("c-test".into(), "test".into(), "a model said so".into());
    let (supporting, denying, status) = (strings(supporting), strings(denying), Confirmed);
    Verdict {
        claim,
        text,
        status,
        supporting,
        denying,
        reason,
    }
}

#[test]
fn enforce_downgrades_fabricated_confirmations() {
    let mut reports = fixture().reports;
    reports.extend(batch(&[
        " Coastal-Media  | Fish market fire",
        " | x",
        "  | y",
    ])); // a, b, c
    let owner = "someone-else".to_string();
    reports.push(Report {
        owner,
        ..reports[0].clone()
    }); // pm-01 with a second owner
    let single = [
        confirmed(&["pm-05", "pm-06"], &[]), // two outlets of one owner
        confirmed(&["pm-05", "a"], &[]),     // owners differ only in case and spaces
        confirmed(&["ghost-1", "ghost-2"], &[]),
        confirmed(&["pm-05", "ghost-1"], &[]),
        confirmed(&["b", "c"], &[]),         // blank owners
        confirmed(&["pm-01", "pm-02"], &[]), // pm-01 is ambiguous
        confirmed(&[], &[]),
    ];
    for v in single {
        let out = enforce(v.clone(), &reports);
        assert_eq!(out.status, SingleSource, "{v:?}");
        assert!(
            out.reason.starts_with("single source: downgraded"),
            "{out:?}"
        );
        assert_eq!((out.supporting, out.denying), (v.supporting, v.denying));
    }
    for denying in ["pm-10", "ghost"] {
        let out = enforce(confirmed(&["pm-09", "pm-11"], &[denying]), &reports);
        assert_eq!(out.status, Contradicted);
    }
    let genuine = confirmed(&["pm-02", "pm-03"], &[]);
    assert_eq!(enforce(genuine.clone(), &reports), genuine);
    let modest = Verdict {
        status: SingleSource,
        ..genuine
    };
    assert_eq!(enforce(modest.clone(), &reports), modest);
}

#[test]
fn an_owner_spelt_with_other_spacing_or_case_is_one_source() {
    assert_eq!(
        owner_key("  Ambrook   Media\tGroup "),
        "ambrook media group"
    );
    let reports = batch(&[
        "Ambrook  Media Group | Ferry services suspended at Kelby pier",
        "ambrook media group | Ferry services suspended at Kelby pier",
    ]);
    assert_eq!(statuses(&reports), [SingleSource]);
}

#[test]
fn reasons_name_the_owners() {
    let verdicts = newsroom(&fixture().reports);
    let reason = |id: &str| {
        let v = verdicts.iter().find(|v| ids(v).contains(id));
        v.map(|v| v.reason.as_str()).unwrap_or_default()
    };
    let reasons = [
        "confirmed: reported by 2 independent owners (coastal-media, harbour-authority)",
        "single source: 2 reports, both owned by coastal-media",
        "single source: 1 report, owned by radio-portmere",
        "contradicted: portmere-education denies what sample-wire reports",
    ];
    assert_eq!(["pm-01", "pm-05", "pm-08", "pm-10"].map(reason), reasons);
}

#[test]
fn serde_shapes() {
    let json = r#"{"id":"x","title":"t","outlet":"o","owner":"w"}"#;
    let r: Report = serde_json::from_str(json).expect("defaults apply");
    assert_eq!((r.summary.as_str(), r.published), ("", None));
    let v = Verdict {
        status: SingleSource,
        ..confirmed(&["x"], &[])
    };
    assert_eq!(
        serde_json::to_value(v).expect("json")["status"],
        "single_source"
    );
    let cr = ClaimReport {
        id: "x".into(),
        stance: Denies,
    };
    assert_eq!(serde_json::to_value(cr).expect("json")["stance"], "denies");
}

/// Look-alike reports that differ in who did what are never one confirmed claim (issue 30's
/// cases, in words of their own).
#[test]
fn look_alikes_that_differ_in_who_did_what_are_not_confirmed() {
    let cases: [[&str; 4]; 5] = [
        [
            "a | Greens win Dunmore by-election",
            "b | Greens win the Dunmore by-election, count shows",
            "c | Liberals win Dunmore by-election",
            "d | Liberals win the Dunmore by-election after recount",
        ],
        [
            "a | Kelco recalls 40,000 vans over airbag fault",
            "b | Kelco recalls 40,000 vans over airbag fault, regulator says",
            "c | Marden recalls 40,000 vans over airbag fault",
            "d | Marden recalls 40,000 vans over airbag fault, regulator says",
        ],
        [
            "a | Rovers beat United 2-1 at Elm Park",
            "b | Rovers beat United 2-1 in derby at Elm Park",
            "c | United beat Rovers 2-1 at Elm Park",
            "d | United beat Rovers 2-1 in derby at Elm Park",
        ],
        [
            "a | Northwind to acquire Belmont Foods for $2bn",
            "b | Northwind to acquire Belmont Foods in $2bn deal",
            "c | Belmont Foods to acquire Northwind for $2bn",
            "d | Belmont Foods to acquire Northwind in $2bn deal",
        ],
        [
            "a | Kelsby flood: 12 dead as river bursts banks",
            "b | Kelsby flood leaves 12 dead",
            "c | Kelsby flood: 20 dead as river bursts banks",
            "d | Kelsby flood leaves 20 dead",
        ],
    ];
    let note = "e | Notes | In the news: Greens, Liberals, Kelco, Marden, Rovers, United, \
        Northwind, Belmont Foods and Kelsby.";
    for case in cases {
        // Read with and without a summary naming them in running text, as feeds often have.
        for lines in [case.to_vec(), [&case[..], &[note]].concat()] {
            let verdicts = newsroom(&batch(&lines));
            for v in verdicts.iter().filter(|v| v.status == Confirmed) {
                let sides = ids(v)
                    .iter()
                    .map(|id| id < &"c".to_string())
                    .collect::<BTreeSet<_>>();
                assert_eq!(sides.len(), 1, "{case:?}: one claim mixes accounts: {v:#?}");
                // Two makers' recalls may be two events; one count has one winner and one toll.
                assert!(
                    case[0].contains("recalls"),
                    "{case:?}: confirmed although another account conflicts: {verdicts:#?}"
                );
            }
        }
    }
}

#[test]
fn a_denial_without_a_cue_word_counts() {
    let reports = batch(&[
        "wire | Ferry services suspended at Kelsby",
        "radio | Kelsby ferry services suspended",
        "operator | Ferries are operating as usual, Kelsby Harbour Authority says",
    ]);
    let verdicts = newsroom(&reports);
    assert!(
        verdicts.iter().all(|v| v.status != Confirmed),
        "{verdicts:#?}"
    );
    let suspended = verdicts
        .iter()
        .find(|v| v.supporting.contains(&"a".to_string()));
    assert_eq!(
        suspended.map(|v| v.denying.clone()),
        Some(vec!["c".to_string()])
    );
}

#[test]
fn a_summary_stating_the_opposite_state_denies_a_headline_that_states_none() {
    let reports = batch(&[
        "wire | Sandhu to quit cabinet over grants row | Minister Harjit Sandhu will resign.",
        "radio | Culture minister Sandhu set to step down | Sandhu will leave cabinet this week.",
        "press | Sandhu to table arts funding overhaul at caucus | The office said Harjit Sandhu \
         remains culture minister.",
    ]);
    let verdicts = newsroom(&reports);
    assert!(
        verdicts.iter().all(|v| v.status != Confirmed),
        "{verdicts:#?}"
    );
    let quits = holding(&verdicts, "a");
    assert!(quits.denying.contains(&"c".to_string()), "{quits:?}");
    // A summary that states the same state, or one about another subject, denies nothing.
    let reports = batch(&[
        "wire | Sandhu to quit cabinet over grants row | Minister Harjit Sandhu will resign.",
        "radio | Culture minister Sandhu set to step down | Sandhu will leave cabinet this week.",
        "press | Sandhu to go at caucus | The deputy will remain in post.",
    ]);
    let verdicts = newsroom(&reports);
    assert!(
        verdicts.iter().all(|v| v.denying.is_empty()),
        "{verdicts:#?}"
    );
}

/// The verdict of the claim that report `id` supports.
fn holding<'a>(verdicts: &'a [Verdict], id: &str) -> &'a Verdict {
    verdicts
        .iter()
        .find(|v| v.supporting.iter().any(|s| s == id))
        .unwrap_or_else(|| panic!("no claim is supported by {id}: {verdicts:#?}"))
}

/// Whether `group` puts reports `a` and `b` in one claim.
fn together(reports: &[Report], a: &str, b: &str) -> bool {
    group(reports).iter().any(|c| {
        let has = |id: &str| c.reports.iter().any(|r| r.id == id);
        has(a) && has(b)
    })
}

#[test]
fn a_denial_lowers_the_bar_for_itself_only() {
    // The denial of a ground's sale shares the club and the ground with a match report there;
    // the match report must not ride into the sale's claim on the denial's lower bar.
    let reports = batch(&[
        "gazette | Halbury Wanderers to sell Fenwick Park to a developer \
            | The club would lease the ground back for three years, papers seen by the Gazette show.",
        "gazette | Wanderers' Fenwick Park home to be sold for flats",
        "echo | Halbury Wanderers deny plans to sell Fenwick Park \
            | The club called the report false.",
        "wire | Corbett Albion beat Halbury Wanderers 3-0 \
            | Albion won 3-0 at Fenwick Park in front of 9,000.",
    ]);
    assert!(!together(&reports, "a", "d"), "{:#?}", group(&reports));
    let verdicts = newsroom(&reports);
    assert_eq!(holding(&verdicts, "a").denying, ["c".to_string()]);
}

#[test]
fn swapped_roles_split_even_a_denial() {
    // "Braddock did not sue Kettering" denies that Braddock sued, not that Kettering did.
    let reports = batch(&[
        "one | Kettering sues Braddock over leaked memo",
        "two | Kettering sues Braddock over leaked memo, court papers show",
        "three | Braddock did not sue Kettering, his lawyer says",
    ]);
    assert!(!together(&reports, "a", "c"), "{:#?}", group(&reports));
    assert!(together(&reports, "a", "b"), "{:#?}", group(&reports));
    // The two reports agree, but a third owner says otherwise about the same two names.
    let verdicts = newsroom(&reports);
    assert_ne!(holding(&verdicts, "a").status, Confirmed, "{verdicts:#?}");
}

#[test]
fn winners_and_losers_are_read_from_verbs_of_contest() {
    let reports = batch(&[
        "one | Pellow elects Dana Ruiz after a recount",
        "two | Omar Best defeats Dana Ruiz in Pellow mayoral race",
        "three | Dana Ruiz beats Omar Best in Pellow",
        "four | Omar Best beaten by Dana Ruiz in Pellow race",
    ]);
    assert!(!together(&reports, "a", "b"), "{:#?}", group(&reports));
    assert!(!together(&reports, "c", "b"), "{:#?}", group(&reports));
    let verdicts = newsroom(&reports);
    assert!(
        verdicts.iter().all(|v| v.status != Confirmed),
        "{verdicts:#?}"
    );
}

#[test]
fn when_unclear_it_is_not_confirmed() {
    let found = [
        "one | Rare beetle found again on Tollmere heath \
            | A volunteer photographed the insect, unseen in the county since 1950.",
        "two | Beetle thought lost is found again on Tollmere heath \
            | Naturalists will visit the heath to check the find.",
    ];
    let verdicts = newsroom(&batch(&found));
    assert_eq!(holding(&verdicts, "a").status, Confirmed, "{verdicts:#?}");
    // A rebuttal worded as another fact shares the place and little else: the judge cannot
    // read it as a denial, nor rule it out as one.
    let rebuttal = "three | Tollmere insect identified as a common ground beetle, experts say \
        | Entomologists examined the photograph.";
    let reports = batch(&[found[0], found[1], rebuttal]);
    let verdicts = newsroom(&reports);
    let claim = holding(&verdicts, "a");
    assert_eq!(claim.status, SingleSource, "{verdicts:#?}");
    assert!(
        claim.reason.contains("three") && claim.reason.contains("(c)"),
        "{claim:?}"
    );
    // Another place's report on the same template is another subject, not an unclear one.
    let elsewhere = "three | Rare beetle found again on Ashcombe moor \
        | A ranger photographed the insect.";
    let verdicts = newsroom(&batch(&[found[0], found[1], elsewhere]));
    assert_eq!(holding(&verdicts, "a").status, Confirmed, "{verdicts:#?}");
}

#[test]
fn a_report_stating_the_opposite_state_is_unclear_though_it_names_another_place() {
    let breach = [
        "one | Embankment breach floods farmland east of Corrow \
            | The council said a 30-metre section of the Selby Moss embankment gave way on \
            Monday, putting about 900 acres under water.",
        "two | Selby Moss embankment gives way, swamping 900 acres of farms \
            | About 30 metres of the bank failed on Monday, the council said.",
    ];
    let verdicts = newsroom(&batch(&breach));
    assert_eq!(holding(&verdicts, "a").status, Confirmed, "{verdicts:#?}");
    // The engineers' answer names a speaker the first report never mentions, and the first
    // names a town the answer never does: plainly apart from it by names alone. But it puts
    // the embankment in the opposite state: a denial the judge cannot place, so unclear.
    let intact = "three | River Board: Selby Moss embankment intact, water spilled over a low \
        stretch | Engineers who walked the bank at dusk found it whole; storm runoff overtopped \
        a dip near the ring road and has since drained away.";
    let verdicts = newsroom(&batch(&[breach[0], breach[1], intact]));
    let claim = holding(&verdicts, "a");
    assert_eq!(claim.status, SingleSource, "{verdicts:#?}");
    assert!(claim.reason.contains("(c)"), "{claim:?}");
}

#[test]
fn a_wire_update_is_read_without_its_kicker_and_a_label_by_its_summary() {
    let dead = [
        "one | Three people dead after landslide hits Corvais \
            | Heavy rain brought a hillside down on four houses.",
        "two | Three killed as mud buries homes in Corvais | Two people are still missing.",
    ];
    // "UPDATE 3-" is the wire's third version, not three dead: the toll is five.
    let wire = "three | UPDATE 3-Corvais landslide death toll rises to five \
        | Rescuers recovered two more bodies.";
    let verdicts = newsroom(&batch(&[dead[0], dead[1], wire]));
    let claim = holding(&verdicts, "a");
    assert!(
        !claim.supporting.contains(&"c".to_string()),
        "{verdicts:#?}"
    );
    assert_ne!(claim.status, Confirmed, "{verdicts:#?}");
    // "Update: <topic>" states nothing in its headline: what changed is in its summary.
    let ill = [
        "one | Fourteen ill in norovirus outbreak at Elmbank care home \
            | The home has stopped taking new residents.",
        "two | Norovirus outbreak at Elmbank care home leaves 14 ill | Visits are suspended.",
    ];
    let update = "three | Update: norovirus outbreak at Elmbank care home \
        | The number of people with symptoms has risen to 22. Visiting is suspended.";
    let verdicts = newsroom(&batch(&[ill[0], ill[1], update]));
    let claim = holding(&verdicts, "a");
    assert!(
        !claim.supporting.contains(&"c".to_string()),
        "{verdicts:#?}"
    );
    assert_ne!(claim.status, Confirmed, "{verdicts:#?}");
}

#[test]
fn a_name_extended_by_a_word_is_another_team() {
    let reports = batch(&[
        "one | Harlow Vale beat Corran Rangers 3-2 | The men's side stay second.",
        "two | Harlow Vale Ladies beat Corran Rangers Ladies 3-2 | A cup tie at the Vale.",
        "three | Harlow Vale Ladies beat Corran Rangers Ladies 3-2 | The Ladies reach the semi-final.",
    ]);
    // Only a word-for-word template is read this way: "Harlow Vale" and "Harlow Vale Ladies"
    // in otherwise different headlines may still be one team named in full and in short.
    assert!(!together(&reports, "a", "b"), "{:#?}", group(&reports));
    assert!(together(&reports, "b", "c"), "{:#?}", group(&reports));
    assert_eq!(holding(&newsroom(&reports), "b").status, Confirmed);
    // A district before a street's name is another street, with another object or not.
    for other in ["depot", "school"] {
        let reports = batch(&[
            "one | North Quay Street depot closed for inspection".to_string(),
            format!("two | Quay Street {other} closed for inspection"),
        ]);
        let meanings = all_alike(&reports);
        let verdicts = newsroom_with(&reports, Some(&meanings));
        assert_eq!(verdicts.len(), 2, "{verdicts:#?}");
    }
}

/// A claim grouped elsewhere (a model's), every report supporting it.
fn given(ids: &[&str]) -> Claim {
    Claim {
        id: "c".into(),
        text: "t".into(),
        reports: ids
            .iter()
            .map(|id| ClaimReport {
                id: id.to_string(),
                stance: Supports,
            })
            .collect(),
    }
}

#[test]
fn claims_rated_alone_are_rated_among_all_the_others() {
    // Two owners report one result, a third reports the other winner: as one batch, the
    // first claim is contradicted by its rival.
    let reports = batch(&[
        "one | Mara Quill wins Heron Medal for poetry",
        "two | Heron Medal for poetry won by Mara Quill",
        "three | Heron Medal for poetry goes to Idris Vane",
        "four | Tollmere lifeboat station to close in spring",
    ]);
    let claims = group(&reports);
    let all = cross_check_all(&claims, &reports);
    let quill = all
        .iter()
        .position(|v| v.supporting.contains(&"a".to_string()));
    let quill = quill.expect("a claim holds the first report");
    assert_eq!(all[quill].status, Contradicted, "{all:#?}");
    // Rated alone, with every other claim and report read: the same verdict, and only it.
    let rate = BTreeSet::from([claims[quill].id.as_str()]);
    let some = cross_check_some_with(&claims, &rate, &reports, None);
    assert_eq!(some, [all[quill].clone()]);
    // An id of no claim rates nothing (the flow then counts its claim single-source).
    let none = BTreeSet::from(["c-no-such-claim"]);
    assert!(cross_check_some_with(&claims, &none, &reports, None).is_empty());
    // What the rating rests on: with only its own claim and reports, nothing says otherwise.
    let own: Vec<Report> = reports[..2].to_vec();
    let alone = cross_check_all(&claims[quill..=quill], &own);
    assert_eq!(alone[0].status, Confirmed, "{alone:#?}");
}

#[test]
fn a_claim_given_from_outside_needs_two_owners_alike() {
    // A grouping from elsewhere (a model) is cross-checked on the words: two owners whose
    // reports are alike only through a third report, or not at all, do not confirm it.
    let reports = batch(&[
        "one | Tollmere lifeboat station to close in spring",
        "one | Tollmere lifeboat station closing: crews to move to Ashcombe",
        "two | Volunteers fear for coastal safety after RNLI decision",
    ]);
    let verdicts = cross_check_all(&[given(&["a", "b", "c"])], &reports);
    assert_eq!(verdicts[0].status, SingleSource, "{verdicts:#?}");
    assert!(verdicts[0].reason.contains("alike"), "{verdicts:#?}");
    let alike = batch(&[
        "one | Tollmere lifeboat station to close in spring",
        "two | Tollmere lifeboat station will close in the spring",
    ]);
    let verdicts = cross_check_all(&[given(&["a", "b"])], &alike);
    assert_eq!(verdicts[0].status, Confirmed, "{verdicts:#?}");
}

#[test]
fn owners_who_may_tell_who_did_what_the_other_way_round_confirm_nothing() {
    // A grouping from elsewhere (a model) that puts cause and effect either way round: the
    // judge cannot read which is meant, so neither owner's account confirms the other's.
    let reports = batch(&[
        "one | Drought speeds up soil erosion across Varnley farms, study finds",
        "two | Soil erosion across Varnley farms worsens drought, study finds",
    ]);
    let verdicts = cross_check_all(&[given(&["a", "b"])], &reports);
    assert_eq!(verdicts[0].status, SingleSource, "{verdicts:#?}");
    assert!(
        verdicts[0].reason.contains("other way round"),
        "{verdicts:#?}"
    );
    // The same account in the passive voice confirms it.
    let reports = batch(&[
        "one | Drought speeds up soil erosion across Varnley farms, study finds",
        "two | Soil erosion across Varnley farms sped up by drought, study finds",
    ]);
    let verdicts = cross_check_all(&[given(&["a", "b"])], &reports);
    assert_eq!(verdicts[0].status, Confirmed, "{verdicts:#?}");
}

#[test]
fn the_mens_and_the_womens_match_are_two_events() {
    let reports = batch(&[
        "one | Harlow Vale men down Corran by twenty-four points to seventeen",
        "two | Harlow Vale's women win 24-17 at Corran to reach the final",
        "three | Harlow Vale men beat Corran 24-17",
    ]);
    assert!(!together(&reports, "a", "b"), "{:#?}", group(&reports));
    assert!(together(&reports, "a", "c"), "{:#?}", group(&reports));
}

/// Meanings where every report reads exactly alike to the model.
fn all_alike(reports: &[Report]) -> Meanings {
    let one = |_: &Report| {
        let mut v = vec![0.0_f32; 8];
        v[0] = 1.0;
        v
    };
    Meanings::new(reports.iter().map(|r| (r.id.clone(), one(r))).collect())
}

#[test]
fn a_model_brings_paraphrases_together_that_share_no_words() {
    // Invented wording: no word in common but the place's name.
    let reports = batch(&[
        "alpha | Thornby ring road shut after lorry spill",
        "beta | Crash sheds cargo, closing Thornby bypass to all traffic",
    ]);
    let apart = group(&reports);
    assert_eq!(apart.len(), 2, "words alone keep them apart: {apart:?}");
    let meanings = all_alike(&reports);
    let together = group_with(&reports, Some(&meanings));
    assert_eq!(together.len(), 1, "{together:?}");
    let verdicts = newsroom_with(&reports, Some(&meanings));
    assert_eq!(verdicts[0].status, Confirmed, "{verdicts:?}");
}

#[test]
fn a_model_never_merges_what_the_frames_split() {
    // Read as identical by the model, yet another winner, another figure, another name,
    // another object.
    for lines in [
        [
            "alpha | Rovers beat United 2-1 at Elm Park",
            "beta | United beat Rovers 2-1 at Elm Park",
        ],
        [
            "alpha | Flood kills twelve in Marrow Valley",
            "beta | Flood kills 20 in Marrow Valley",
        ],
        [
            "alpha | Kelco recalls vans over brake fault",
            "beta | Marden recalls vans over brake fault",
        ],
        // Another object, or another happening, on one template at one place.
        [
            "alpha | Quay Street station closed for inspection",
            "beta | Inspection shuts market on North Quay Street",
        ],
        // Another object beside one both name.
        [
            "alpha | Tanner Row tunnel loses power overnight",
            "beta | Power cut hits station on North Tanner Row",
        ],
    ] {
        let reports = batch(&lines);
        let verdicts = newsroom_with(&reports, Some(&all_alike(&reports)));
        assert!(
            verdicts.iter().all(|v| v.status != Confirmed),
            "{lines:?}: {verdicts:?}"
        );
    }
}

#[test]
fn one_subject_to_the_model_is_not_yet_one_happening() {
    // The model reads these two as one subject (the cosine the real model gives them), not as
    // one happening: the incident words (a gas leak, a storm) keep them apart.
    let reports = batch(&[
        "alpha | Tanner Row bridge evacuated after gas leak",
        "beta | Tanner Row bridge flooded after storm",
    ]);
    let cosine = 0.755_f32;
    let vectors = [vec![1.0, 0.0], vec![cosine, (1.0 - cosine * cosine).sqrt()]];
    let ids = reports.iter().map(|r| r.id.clone());
    let meanings = Meanings::new(ids.zip(vectors).collect());
    let verdicts = newsroom_with(&reports, Some(&meanings));
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    let rewording = batch(&[
        "alpha | Tanner Row bridge evacuated after gas leak",
        "beta | Gas escape empties Tanner Row bridge",
    ]);
    let verdicts = newsroom_with(&rewording, Some(&all_alike(&rewording)));
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
}

#[test]
fn a_count_and_a_share_of_one_value_do_not_pin_one_event() {
    // One outlet, one day, one place: a storm that hit four farms and a rate cut to 4 %.
    // The value 4 is in both, but four farms and 4 % are two figures.
    let r = |id: &str, title: &str, summary: &str| Report {
        id: id.into(),
        title: title.into(),
        summary: summary.into(),
        url: String::new(),
        published: Some("2026-11-05T12:45:00Z".into()),
        outlet: "Merrow Dale Gazette".into(),
        owner: "Merrow Dale Media".into(),
        source: String::new(),
    };
    let reports = [
        r(
            "storm",
            "Gale flattens barns across Merrow Dale",
            "Roofs were torn from four farms on the western slopes, owners said.",
        ),
        r(
            "rate",
            "Lenders ease terms as central bank lowers rate to 4%",
            "The Merrow Dale Gazette said the quarter-point cut would help farm borrowers.",
        ),
    ];
    assert_eq!(group(&reports).len(), 2, "{:?}", group(&reports));
}

#[test]
fn a_scan_for_near_reports_reads_the_event_window_and_every_undated_report() {
    let mut reports = batch(&["x | one", "x | two", "x | three", "x | four", "x | five"]);
    let at = |day: u32| Some(format!("2026-11-{day:02}T06:00:00Z"));
    // Days 1, 3, 5 (two days either side of 3 are inside the 72 hours), 9; one undated.
    for (r, published) in reports.iter_mut().zip([at(1), at(3), at(5), at(9), None]) {
        r.published = published;
    }
    let batch = Batch::new(&reports, None);
    let position = |id: &str| batch.sorted.iter().position(|r| r.id == id).unwrap();
    let everyone = Vec::from_iter(0..batch.sorted.len());
    let near = |of: &[&str]| {
        let of = Vec::from_iter(of.iter().map(|id| position(id)));
        let found = batch.within(&everyone, batch.span(&of));
        BTreeSet::from_iter(found.map(|&k| batch.sorted[k].id.clone()))
    };
    let set = |ids: &[&str]| BTreeSet::from_iter(ids.iter().map(|s| s.to_string()));
    assert_eq!(near(&["a"]), set(&["a", "b", "e"]));
    assert_eq!(near(&["b"]), set(&["a", "b", "c", "e"]));
    assert_eq!(near(&["a", "c"]), set(&["a", "b", "c", "e"]));
    assert_eq!(near(&["d"]), set(&["d", "e"]));
    // An undated report may be near any: every report is read.
    assert_eq!(near(&["e"]), set(&["a", "b", "c", "d", "e"]));
    // Each report the window leaves out is too far from every report scanned for.
    for (of, left_out) in [("a", "c"), ("a", "d"), ("d", "c")] {
        let (i, j) = (position(of), position(left_out));
        assert!(
            batch.features[i].too_far(&batch.features[j]),
            "{of} / {left_out}"
        );
    }
}

#[test]
fn names_compared_as_numbers_read_as_the_strings_do() {
    let reports = batch(&[
        "one | Ashvale Ferries wins Corbin harbour contract",
        "two | Kestrel Marine lands Corbin harbour deal",
        "three | Tenders for ferries and marine work closed in March, Corbin said.",
        "four | Kestrel Marine and Ashvale Ferries bid for Corbin work",
    ]);
    let b = Batch::new(&reports, None);
    let mut conflicts = 0;
    for i in 0..reports.len() {
        for j in 0..reports.len() {
            let (x, y) = (&b.features[i], &b.features[j]);
            let strings =
                frame::strong_names_conflict(&x.name_list, &x.mentions, &y.name_list, &y.mentions);
            assert_eq!(b.numbered.names_elsewhere(i, j), strings, "{i} and {j}");
            conflicts += usize::from(strings);
        }
    }
    assert!(
        conflicts > 0,
        "no pair names another firm: the test reads nothing"
    );
}

/// Meanings where reports of `alike` ids read exactly alike and every other report reads as
/// about something else entirely (orthogonal vectors).
fn alike_apart(reports: &[Report], alike: &[&str]) -> Meanings {
    let vectors = reports.iter().enumerate().map(|(k, r)| {
        let axis = if alike.contains(&r.id.as_str()) {
            0
        } else {
            k + 1
        };
        let mut v = vec![0.0_f32; reports.len() + 1];
        v[axis] = 1.0;
        (r.id.clone(), v)
    });
    Meanings::new(vectors.collect())
}

#[test]
fn what_the_model_reads_as_unrelated_neither_rivals_nor_joins_a_claim() {
    // Invented: two owners tell one rockfall; a third owner's rocket launch shares the bay's
    // name, and words alone read it as a rival account.
    let reports = batch(&[
        "one | Rockfall closes 3km of Haddon Bay cliff walk",
        "two | Haddon Bay cliff walk shut after 3km rockfall",
        "three | Kestrel-4 rocket launches from Haddon Bay at third attempt",
    ]);
    let related = newsroom_with(&reports, Some(&all_alike(&reports)));
    let confirmed = |verdicts: &[Verdict]| {
        verdicts
            .iter()
            .any(|v| v.status == Confirmed && ids(v) == BTreeSet::from(["a".into(), "b".into()]))
    };
    assert!(
        !confirmed(&related),
        "read as one subject, the launch withholds: {related:?}"
    );
    let apart = newsroom_with(&reports, Some(&alike_apart(&reports, &["a", "b"])));
    assert!(confirmed(&apart), "{apart:?}");
    let launch = apart.iter().find(|v| v.supporting.contains(&"c".into()));
    assert!(launch.is_some_and(|v| v.denying.is_empty()), "{apart:?}");
}

#[test]
fn reports_the_model_reads_as_unrelated_are_never_one_claim() {
    let reports = batch(&[
        "one | Harlow Vale men beat Corran 24-17",
        "two | Harlow Vale men beat Corran 24-17 in the cup",
    ]);
    assert!(together(&reports, "a", "b"), "words alone group them");
    let apart = group_with(&reports, Some(&alike_apart(&reports, &[])));
    assert_eq!(apart.len(), 2, "{apart:?}");
}

#[test]
fn a_report_ending_its_headline_on_a_figure_supports_what_it_says() {
    // The summary's first words once joined the headline's figure ("nine" + "Three" read as
    // 12; "450" counted "union"), so each report denied its own claim.
    let reports = batch(&[
        "Coast News | Harbour raid arrests rise to nine | Three more people were held on Tuesday.",
        "Bay Radio | Mill job cuts climb to 450 | Union leaders called it a blow to the town.",
    ]);
    for verdict in newsroom(&reports) {
        assert_eq!(verdict.status, SingleSource, "{verdict:?}");
        assert!(verdict.denying.is_empty(), "{verdict:?}");
    }
}
