use super::*;

fn lexicon(texts: &[&str]) -> Lexicon {
    Lexicon::new(texts.iter().copied())
}

/// Whether `a` and `b` swap roles, their names read with `lex`.
fn swapped(lex: &Lexicon, a: &str, b: &str) -> bool {
    role_swap(&Actors::of(a, lex), &Actors::of(b, lex))
}

fn names(lex: &Lexicon, title: &str) -> Vec<String> {
    lex.names(title).into_iter().map(|n| n.stem).collect()
}

#[test]
fn names_come_from_the_batch_and_include_an_opening_name() {
    let lex = lexicon(&[
        "Kelco recalls vans over airbag fault",
        "The recall follows complaints to Kelco and Marden dealers.",
        "Fire at Eastside school",
        "Crews fought the fire for hours.",
    ]);
    assert_eq!(
        names(&lex, "Kelco recalls vans over airbag fault"),
        ["kelco"]
    );
    assert_eq!(names(&lex, "Marden recalls vans"), ["marden"]);
    assert_eq!(names(&lex, "Fire at Eastside school"), ["eastsid"]);
    assert!(names(&lex, "Fire At Eastside School").contains(&"eastsid".to_string()));
}

#[test]
fn figures_normalise_units_and_formats() {
    let same = [
        (
            "1,240 pairs counted",
            "one thousand two hundred and forty pairs counted",
        ),
        ("48,000 SUVs recalled", "Forty-eight thousand SUVs recalled"),
        ("Visibility under 50 metres", "visibility below 50m"),
        ("Rates raised to 4.5%", "rates raised to 4.5 percent"),
        ("Rates raised to 4.5%", "rates raised to 4.5 per cent"),
        ("twelve dead", "12 dead"),
        ("48-hour strike", "strike of 48 hours"),
        ("$2.1bn deal", "$2.1 billion deal"),
        ("Deal worth 2.1 billion dollars", "$2.1bn deal"),
        ("1,200 jobs cut", "1200 jobs cut"),
        ("Rovers win 2-1", "Rovers lose 1-2"),
        (
            "Bill passes 31-18",
            "Bill passes by thirty-one votes to eighteen",
        ),
        ("Vale win 24-17", "Vale win by 24 points to 17"),
        ("Bill passes 312-248", "Bill passes: 312 for, 248 against"),
        ("48-hour strike", "two-day strike"),
        ("Out for three months", "out for 12 weeks"),
        (
            "Rs 1200 Cr cleared for metro",
            "₹1,200 crore cleared for metro",
        ),
        ("Rs. 1,200 crore for metro", "12 billion rupees for metro"),
        ("Rs 3.4 lakh fine", "₹340,000 fine"),
        (
            "Painting sold for A$1.15 million",
            "Painting fetches $A1.15m",
        ),
        ("Painting fetches $A1.15m", "Painting fetches $1.15m"),
        (
            "M4.6 quake rattles Kelby",
            "Magnitude 4.6 quake rattles Kelby",
        ),
    ];
    for (a, b) in same {
        let (fa, fb) = (figures(a), figures(b));
        assert!(
            !figures_conflict(&fa, &fa, &fb, &fb),
            "{a} / {b}: {fa:?} {fb:?}"
        );
        assert!(!fa.is_empty(), "{a}");
    }
    let different = [
        ("Rates raised to 4.5%", "Rates raised to 4.75%"),
        ("12 dead in flood", "20 dead in flood"),
        ("Rovers win 2-1", "Rovers win 3-1"),
        ("Lane 2 of the bridge closed", "Lane 4 of the bridge closed"),
        ("Bill passes 31-18", "Bill passes by 31 votes to 19"),
        ("Captain out for six weeks", "Captain to miss three months"),
        ("Bill passes: 312 for, 248 against", "Bill passes 312-284"),
        (
            "Painting fetches $A1.15m",
            "Painting sold for A$1.5 million",
        ),
        (
            "Rs 1200 Cr cleared for metro",
            "₹1,200 lakh cleared for metro",
        ),
        (
            "M4.6 quake rattles Kelby",
            "Magnitude 4.9 quake rattles Kelby",
        ),
    ];
    for (a, b) in different {
        let (fa, fb) = (figures(a), figures(b));
        assert!(
            figures_conflict(&fa, &fa, &fb, &fb),
            "{a} / {b}: {fa:?} {fb:?}"
        );
    }
    // A later figure is another claim even when its report cites the earlier one.
    let (early, late) = (figures("Flood toll 12"), figures("Flood toll rises to 15"));
    let late_all = figures("Flood toll rises to 15 from 12 yesterday");
    assert!(figures_conflict(&early, &early, &late, &late_all));
    assert!(figures_conflict(&late, &late_all, &early, &early));
    // The figure a change started from is the past: gone from what the report states.
    let cuts = figures("Glassworks cuts now 650, up from 400");
    assert!(figures_conflict(
        &cuts,
        &cuts,
        &figures("400 jobs to go"),
        &figures("400 jobs to go")
    ));
    assert_eq!(
        figures("Toll rose from 12 to 15")
            .values()
            .flatten()
            .collect::<Vec<_>>(),
        ["15"]
    );
    for told in [
        "Cuts at the mill go to 450 from the 300 announced",
        "Toll climbs to 15 from 12",
    ] {
        let told = figures(told);
        assert!(
            !told.values().flatten().any(|v| v == "300" || v == "12"),
            "{told:?}"
        );
    }
    assert!(!figures("Flights from 2 terminals").is_empty());
    let shuttle = figures("Shuttle runs to 4 gates from the 2 terminals");
    assert!(shuttle.values().flatten().any(|v| v == "2"), "{shuttle:?}");
    assert!(figures("Trains from 06:00 to 6pm").is_empty());
    assert!(!figures("Index up 50 points to 7,500").contains_key("score"));
    assert_eq!(
        figures("Election in 2026")["year"].iter().next().unwrap(),
        "2026"
    );
}

#[test]
fn swapped_roles_are_found_and_the_passive_is_read() {
    let lex = lexicon(&["The derby between Rovers and United drew a crowd."]);
    let swap = |a: &str, b: &str| swapped(&lex, a, b);
    assert!(swap("Rovers beat United 2-1", "United beat Rovers 2-1"));
    assert!(swap("Rovers to acquire United", "United to acquire Rovers"));
    assert!(!swap(
        "Rovers beat United 2-1",
        "Rovers beat United 2-1 at home"
    ));
    assert!(!swap(
        "Rovers to acquire United",
        "United to be acquired by Rovers"
    ));
    assert!(swap("Rovers beaten by United", "Rovers beat United"));
    assert!(swap("Rovers to buy United", "United to acquire Rovers"));
    // A name run, or function words, may open a headline.
    let lex = lexicon(&["The tour pairs Ivy Marsh with the Lantern Coats."]);
    let swap = |a: &str, b: &str| swapped(&lex, a, b);
    assert!(swap(
        "Ivy Marsh to support The Lantern Coats on tour",
        "The Lantern Coats to warm up for Ivy Marsh"
    ));
    assert!(!swap(
        "Ivy Marsh to support The Lantern Coats on tour",
        "Ivy Marsh confirmed as opening act for Lantern Coats"
    ));
    let lex = lexicon(&["The derby between Rovers and United drew a crowd."]);
    let swap = |a: &str, b: &str| swapped(&lex, a, b);
    // Converse verbs read as a swap: a split, never a false merge.
    assert!(swap("Rovers beat United", "United lose to Rovers"));
    assert!(!swap("Rovers beat United", "Rovers edge United"));
    assert!(!swap(
        "Marlin Biotech's Corvudine cleared for migraine",
        "Corvudine tablet approved for migraine, says Marlin Biotech"
    ));
    // A place told where the other is acts on nothing.
    let lex = lexicon(&["Patients in Ambervale use the surgery on Orchard Lane."]);
    assert!(!swapped(
        &lex,
        "Orchard Lane surgery in Ambervale closes its list",
        "Ambervale practice on Orchard Lane shuts its list"
    ));
}

#[test]
fn actors_told_the_other_way_round_are_unclear_unless_a_passive_or_a_setting_says_why() {
    let lex = lexicon(&[
        "Researchers in Varnley followed 4,000 adults.",
        "Kelby and Varnley Rovers met on Saturday.",
    ]);
    let unclear = |a: &str, b: &str| order_unclear(&Actors::of(a, &lex), &Actors::of(b, &lex));
    // Cause and effect turned round, around different verbs.
    assert!(unclear(
        "Drought speeds up soil erosion, Varnley study finds",
        "Failing soil worsens drought, study says"
    ));
    // A passive keeps the roles.
    assert!(!unclear(
        "Drought speeds up soil erosion",
        "Soil erosion accelerated by drought"
    ));
    // What follows "as", "from", "in"... is a setting, not one of who acts on whom.
    assert!(!unclear(
        "Ferry sailings from Kelby cancelled as gales hit",
        "Gales halt Kelby ferry crossings"
    ));
    // Contests are read by who won.
    assert!(!unclear(
        "Varnley Rovers beat Kelby 2-1",
        "Kelby lose 2-1 to Varnley Rovers"
    ));
}

#[test]
fn common_nouns_in_swapped_roles_are_found_from_their_verbs_and_voices() {
    let lex = lexicon(&["A collision off Kelby was reported at dawn."]);
    let swap = |a: &str, b: &str| noun_role_swap(&Actors::of(a, &lex), &Actors::of(b, &lex));
    assert!(swap(
        "Tanker strikes ferry off Kelby",
        "Ferry rams tanker in fog off Kelby"
    ));
    assert!(swap(
        "Coach clips lorry on bypass",
        "Lorry crashes into coach on bypass"
    ));
    // One verb written active in both, the modifiers around it aside.
    assert!(swap(
        "Warehouse blaze spreads to neighbouring chapel",
        "Fire at old chapel spreads to warehouse"
    ));
    // The same verb either way, a passive, or the same order: not read as a swap.
    assert!(!swap("Crash closes bridge", "Bridge closed after crash"));
    assert!(!swap("Crash closes bridge", "Bridge closes after crash"));
    assert!(!swap(
        "Warehouse blaze spreads to chapel",
        "Warehouse fire spreads to old chapel"
    ));
    assert!(!swap(
        "Tanker strikes ferry",
        "Ferry holed after being hit by tanker"
    ));
    assert!(!swap("Tanker strikes ferry", "Tanker collides with ferry"));
    // A passive with "by" against an active verb, in the same order: the other way round,
    // whatever the verbs; in the other order, the same account.
    assert!(swap(
        "Moored trawler damaged by berthing ferry",
        "Trawler rams ferry in harbour"
    ));
    assert!(swap(
        "Councilman charged with assaulting neighbour",
        "Councilman assaulted by neighbour"
    ));
    assert!(!swap("Trawler damaged by ferry", "Ferry rams trawler"));
    assert!(swap(
        "Van struck by tram in city centre",
        "Delivery van crashes into tram"
    ));
    // A passive without "by" ("blamed on") is no active verb.
    assert!(!swap(
        "Block collapse blamed on gas blast",
        "Block collapse was not caused by gas"
    ));
    // A noun that opens neither headline is no actor of it.
    assert!(!swap(
        "Fog delays ferry and tanker",
        "Tanker and ferry delayed by fog"
    ));
}

#[test]
fn contests_read_winners_and_losers() {
    let lex = lexicon(&[
        "The count in Pellow put Dana Ruiz and Omar Best level until the recount.",
        "The derby between Rovers and United drew a crowd.",
    ]);
    let read = |t: &str| contest(&title_stems(t), &lex.names(t));
    let set = |names: &[&str]| names.iter().map(|n| stem(n)).collect::<BTreeSet<_>>();
    let elected = read("Pellow elects Dana Ruiz after a recount");
    assert_eq!(elected.winners, set(&["dana", "ruiz"]));
    let defeated = read("Omar Best defeats Ruiz in Pellow race");
    assert_eq!(defeated.winners, set(&["omar", "best"]));
    assert_eq!(defeated.losers, set(&["ruiz"]));
    assert!(contests_conflict(&elected, &defeated));
    // The passive and "lose to" turn the sides round; a figure may stand between.
    let passive = read("Rovers beaten 3-1 by United");
    assert_eq!(
        (passive.winners, passive.losers),
        (set(&["united"]), set(&["rovers"]))
    );
    let lost = read("Rovers lose to United");
    assert!(!contests_conflict(&lost, &read("United beat Rovers 3-1")));
    assert!(contests_conflict(&lost, &read("Rovers beat United 3-1")));
    let over = read("Late goal gives Rovers derby win over United");
    assert!(contests_conflict(
        &over,
        &read("United win derby at Rovers")
    ));
    // Words may stand between the verb and its passive's "by".
    let long = read("Rovers beaten three goals to one by United");
    assert_eq!(
        (long.winners, long.losers),
        (set(&["united"]), set(&["rovers"]))
    );
    // Each names a winner the other headline never names: two results of one race.
    let ruiz = read("Pellow stays red as Ruiz wins the seat");
    assert!(contests_conflict(
        &ruiz,
        &read("Pellow turns blue as Best wins")
    ));
    assert!(!contests_conflict(
        &ruiz,
        &read("Dana Ruiz wins Pellow seat for the reds")
    ));
    // A verb with no name beside it states nothing.
    assert_eq!(
        read("Derby ends in a win for the visitors"),
        Contest::default()
    );
}

#[test]
fn succession_reads_who_succeeds_whom() {
    // Invented names; the body text tells the lexicon they are names.
    let lex = lexicon(&["The board of Calder Mutual met Priya Anand and Tom Wexley on Monday."]);
    let read = |t: &str| contest(&title_stems(t), &lex.names(t));
    let set = |names: &[&str]| names.iter().map(|n| stem(n)).collect::<BTreeSet<_>>();
    let sides = |t: &str| {
        let c = read(t);
        (c.winners, c.losers)
    };
    let anand_over_wexley = (set(&["priya", "anand"]), set(&["tom", "wexley"]));
    let anand_after_wexley = (set(&["anand"]), set(&["wexley"]));
    assert_eq!(
        sides("Anand succeeds Wexley at Calder Mutual"),
        anand_after_wexley
    );
    assert_eq!(sides("Wexley replaced by Anand"), anand_after_wexley);
    assert_eq!(
        sides("Priya Anand takes over from Tom Wexley"),
        anand_over_wexley
    );
    assert_eq!(
        sides("Calder Mutual names Priya Anand chief in place of Tom Wexley"),
        anand_over_wexley
    );
    // The other way round is another event; the same way in other words is not.
    assert!(contests_conflict(
        &read("Anand succeeds Wexley at Calder Mutual"),
        &read("Tom Wexley takes over from Priya Anand")
    ));
    assert!(!contests_conflict(
        &read("Anand succeeds Wexley at Calder Mutual"),
        &read("Calder Mutual appoints Anand instead of Wexley")
    ));
    // "Succeeds in" names no one succeeded.
    assert_eq!(
        sides("Anand succeeds in Calder Mutual vote"),
        Default::default()
    );
}

#[test]
fn the_accused_is_who_a_charge_names() {
    let lex = lexicon(&["A row at the Pellow lights."]);
    let actors = |t: &str| Actors::of(t, &lex);
    let differ = |a: &str, b: &str| accused_differ(&actors(a), &actors(b));
    // Each accuses one the other names unaccused: two events.
    assert!(differ(
        "Cyclist charged with assaulting taxi driver in Pellow",
        "Taxi driver charged after cyclist assaulted at Pellow lights"
    ));
    // The same accused in other words; an accused the other never names; no charge at all.
    assert!(!differ(
        "Cyclist charged with assaulting taxi driver in Pellow",
        "Cyclist accused of punching taxi driver"
    ));
    assert!(!differ(
        "Man charged over Pellow stabbing",
        "Teenager charged over Pellow stabbing"
    ));
    assert!(!differ(
        "Cyclist charged with assaulting taxi driver in Pellow",
        "Taxi driver attacked by cyclist at Pellow lights"
    ));
}

#[test]
fn a_transfer_told_from_either_end_is_one_claim() {
    let lex = lexicon(&["The loan between the Ardley Museum and the Corbin Gallery was signed."]);
    let swap = |a: &str, b: &str| swapped(&lex, a, b);
    // Converse verbs: the order turns round with the verb.
    assert!(!swap(
        "Ardley Museum lends sword to Corbin Gallery",
        "Corbin Gallery borrows sword from Ardley Museum"
    ));
    assert!(swap(
        "Corbin Gallery lends sword to Ardley Museum",
        "Corbin Gallery borrows sword from Ardley Museum"
    ));
    // "To" and "from" before the later name say who receives, whatever the verbs.
    assert!(!swap(
        "Sword heads to Corbin Gallery on loan from Ardley Museum",
        "Corbin Gallery borrows sword from Ardley Museum"
    ));
    assert!(swap(
        "Sword heads to Corbin Gallery on loan from Ardley Museum",
        "Corbin Gallery sends sword to Ardley Museum"
    ));
}

#[test]
fn states_oppose_on_one_subject_without_cue_words() {
    let st = |t: &str| state(t).unwrap_or_else(|| panic!("no state in {t}"));
    let oppose = |a: &str, b: &str| states_oppose(&st(a), &st(b));
    assert!(oppose(
        "Ferry services suspended",
        "Ferries are operating as usual, harbour operator says"
    ));
    assert!(oppose(
        "Minister to resign",
        "Minister will serve her full term"
    ));
    assert!(oppose(
        "Stadium closed",
        "Stadium open as normal for Saturday fixture"
    ));
    assert!(oppose("Unemployment rises to 5%", "Unemployment falls"));
    assert!(!oppose(
        "Ferry timetable unchanged during bridge inspection",
        "Harbour bridge closed"
    ));
    assert!(!oppose("Bridge closed", "Bridge remains closed"));
    assert_eq!(st("Bridge remains closed").axis, "running|disrupted");
    assert!(
        state("Gas leak at depot on Kiln Close").is_none(),
        "a street is no closure"
    );
    assert_eq!(
        without_names("Gas leak on Kiln Close, police say"),
        "Gas leak on  , police say"
    );
}

#[test]
fn facing_a_lawsuit_is_being_sued() {
    let lex =
        lexicon(&["The dispute between Brightwell Optics and Nanterre Instruments began in May."]);
    let swap = |a: &str, b: &str| swapped(&lex, a, b);
    let faces = "Brightwell Optics faces Nanterre lawsuit over lens design";
    assert!(swap(
        "Brightwell Optics sues Nanterre Instruments over lens patent",
        faces
    ));
    assert!(!swap(
        "Nanterre Instruments sues Brightwell Optics over lens patent",
        faces
    ));
}

#[test]
fn an_opening_name_of_two_words_is_a_name_however_rare() {
    // Each firm is named once, opening its own headline; the batch writes its second word in
    // lower case too. Two words capitalised in a sentence-case headline make a name, so two
    // firms in the same role are two actors; one capitalised word alone stays a weak name.
    let (a, b) = (
        "Ashvale Ferries wins Corbin harbour contract",
        "Kestrel Marine lands Corbin harbour deal",
    );
    let lex = lexicon(&[
        a,
        b,
        "Tenders for ferries and marine work closed in March, Corbin said.",
    ]);
    let mentions = |t: &str| text::tokenize(t).iter().map(|w| stem(w)).collect();
    let (na, nb) = (lex.names(a), lex.names(b));
    assert!(na.iter().any(|n| n.stem == stem("ashvale") && n.strong));
    assert!(strong_names_conflict(&na, &mentions(a), &nb, &mentions(b)));
    let single = lex.names("Ashvale wins Corbin harbour contract");
    assert!(!single.iter().any(|n| n.position == 0 && n.strong));
    // Title Case says nothing of names.
    let titled = lex.names("Kestrel Marine Lands Corbin Harbour Deal");
    assert!(!titled.iter().any(|n| n.position == 0 && n.strong));
}

#[test]
fn a_title_before_a_name_is_part_of_it() {
    // "mayor" and "councillor" are written in lower case and capitalised: titles, not verbs.
    let lex = lexicon(&[
        "The court heard a case against Mayor Idris Penhaligon brought by Councillor Delia Hartigan.",
        "The mayor and the councillor met.",
    ]);
    assert!(swapped(
        &lex,
        "Ebbersleigh mayor Idris Penhaligon sues councillor Delia Hartigan",
        "Councillor Delia Hartigan takes Mayor Penhaligon to court"
    ));
    assert!(!swapped(
        &lex,
        "Ebbersleigh mayor Idris Penhaligon sues councillor Delia Hartigan",
        "Mayor Penhaligon takes councillor Hartigan to court"
    ));
}

#[test]
fn going_ahead_after_all_is_later_than_the_call_off() {
    let retried = state("Orla-1 reaches orbit at second attempt").expect("a later state");
    assert_eq!(
        (retried.axis, retried.pole, retried.after),
        ("running|disrupted", true, true)
    );
    let scrubbed = state("Orla-1 satellite launch scrubbed").expect("a state");
    assert_eq!((scrubbed.pole, scrubbed.after), (false, false));
    assert!(later_than(&retried, Some(&scrubbed)));
    assert!(!later_than(&scrubbed, Some(&retried)));
    let on = state("Harbour lights switched on after all as winds ease").expect("a later state");
    assert!(on.after && on.pole);
    assert!(state("Match back on after pitch inspection").is_some_and(|s| s.after));
    // "Back" right before a state tells a return; "backs" is a verb.
    let reopened = state("Swing bridge back open to traffic after checks").expect("a state");
    let closed = state("Lorry crash closes swing bridge").expect("a state");
    assert!(reopened.after && later_than(&reopened, Some(&closed)));
    assert!(state("Council backs closure of swing bridge").is_some_and(|s| !s.after));
    // Without such a phrase, no state word is no state.
    assert_eq!(state("Orla-1 reaches orbit"), None);
}

#[test]
fn a_figure_never_reads_across_a_line_or_a_sentence() {
    // A headline ending in a figure, then a summary: "nine" and "Three" are two figures, and
    // the summary's first word is not what the headline's figure counts.
    let title = "Raid arrests rise to nine";
    let all = figures(&format!(
        "{title}\nThree more people were held, police said."
    ));
    assert_eq!(all.get("number"), Some(&BTreeSet::from(["9".to_string()])));
    assert!(!all.values().flatten().any(|v| v == "12"), "{all:?}");
    let title = "Mill job cuts climb to 450";
    let all = figures(&format!(
        "{title}\nUnion leaders said the figure was a blow."
    ));
    assert!(!all.contains_key("count:union"), "{all:?}");
    // So a report's figures never conflict with its own: it cannot deny the claim it anchors.
    let own = figures(title);
    assert!(!figures_conflict(&own, &all, &own, &all));
    // Within a sentence a figure still reads its noun and its words.
    let one = figures("Forty-eight thousand people. Twelve dead; 3 lanes closed");
    assert_eq!(
        one.get("count:peopl"),
        Some(&BTreeSet::from(["48000".to_string()]))
    );
    assert_eq!(
        one.get("count:dead"),
        Some(&BTreeSet::from(["12".to_string()]))
    );
    assert_eq!(
        one.get("count:lan"),
        Some(&BTreeSet::from(["3".to_string()]))
    );
}

#[test]
fn kickers_are_taken_off_a_headline() {
    let read = |title| {
        let h = headline(title);
        (h.text, h.label)
    };
    // A wire service's version number is no figure of the story.
    let update = read("UPDATE 3-Corvais landslide death toll rises to five");
    assert_eq!(update, ("Corvais landslide death toll rises to five", true));
    assert!(!figures(update.0).values().any(|v| v.contains("3")));
    assert_eq!(
        read("BREAKING: Ferry services suspended"),
        ("Ferry services suspended", false)
    );
    assert_eq!(
        read("Westerby shop fire: update"),
        ("Westerby shop fire", true)
    );
    assert_eq!(read("IN BRIEF:  Kelda Glass"), ("Kelda Glass", true));
    assert_eq!(read("Live | Storm Orla"), ("Storm Orla", false));
    // A wire headline's source after a spaced dash.
    assert_eq!(
        read("Kelco said to explore sale of creamery - Herald"),
        ("Kelco said to explore sale of creamery", false)
    );
    assert_eq!(
        read("Minister expected to quit within days – report"),
        ("Minister expected to quit within days", false)
    );
    assert_eq!(
        read("Floods hit Kelby - again"),
        ("Floods hit Kelby - again", false)
    );
    // A speaker, a figure or a lone label is no kicker.
    for title in [
        "Army Corps: levee intact",
        "48-hour strike called at Selby depot",
        "Update",
        "Update:",
        "Storm update: what we know",
        "",
        "—",
        "UPDATE 2-",
        "Ünïcode – Ödön’s café",
    ] {
        assert_eq!(read(title), (title, false), "{title}");
    }
}

#[test]
fn a_first_sentence_ends_at_a_full_stop_that_ends_one() {
    assert_eq!(
        first_sentence("Cases rose to 2.5 per cent at St. Mary's. Visits stopped."),
        "Cases rose to 2.5 per cent at St. Mary's"
    );
    assert_eq!(first_sentence("No full stop"), "No full stop");
    assert_eq!(first_sentence(""), "");
    assert_eq!(first_sentence("Is it open? Yes."), "Is it open");
}

#[test]
fn running_out_is_no_state_of_running() {
    assert_eq!(
        state("Hospital declares critical incident after running out of beds"),
        None
    );
    assert!(state("Trams running again after power cut").is_some());
}

#[test]
fn a_deliberate_act_opposes_an_accident() {
    let arson = state("Arson attack destroys Kelby corner shop").expect("a state");
    assert_eq!((arson.axis, arson.pole), ("deliberate|accidental", true));
    let accident =
        state("Kelby shop fire started accidentally in a faulty freezer").expect("a state");
    assert!(states_oppose(&arson, &accident), "{arson:?} {accident:?}");
}
