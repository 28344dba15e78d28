//! Tests of the analyzer: pylance's `params` JSON read and written back, typed errors
//! for hostile settings, and each pipeline step (positions, token lengths, ngrams, filter
//! order, stop-word lists, ASCII folding, ICU segmentation) as pylance 11–14 do it.

use std::collections::HashSet;

use super::*;

/// What pylance 11, 12 and 14 write for the default settings.
const DEFAULT_JSON: &str = r#"{"lance_tokenizer":"text","base_tokenizer":"simple","language":"English","with_position":false,"max_token_length":40,"lower_case":true,"stem":true,"remove_stop_words":true,"custom_stop_words":null,"ascii_folding":true,"min_ngram_length":3,"max_ngram_length":3,"prefix_only":false,"block_size":128,"split_identifiers":false,"split_on_numerics":false,"preserve_original":false,"index_operators":false}"#;

fn toks(p: &AnalyzerParams, text: &str) -> Vec<(String, u32)> {
    let mut a = p.analyzer().unwrap();
    let mut out = vec![Token {
        text: "stale".into(),
        position: 9,
    }];
    a.tokens(text, &mut out);
    out.into_iter().map(|t| (t.text, t.position)).collect()
}

fn texts(p: &AnalyzerParams, text: &str) -> Vec<String> {
    toks(p, text).into_iter().map(|t| t.0).collect()
}

fn with(f: impl FnOnce(&mut AnalyzerParams)) -> AnalyzerParams {
    let mut p = AnalyzerParams::defaults();
    f(&mut p);
    p
}

fn err(json: &str) -> String {
    match AnalyzerParams::from_json(json) {
        Ok(p) => panic!("{json} parsed: {p:?}"),
        Err(e) => e.to_string(),
    }
}

fn analyzer_err(p: &AnalyzerParams) -> String {
    match p.analyzer() {
        Ok(_) => panic!("analyzer built for {p:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn defaults_write_pylance_json() {
    assert_eq!(AnalyzerParams::defaults().to_json(), DEFAULT_JSON);
    assert_eq!(
        AnalyzerParams::from_json(DEFAULT_JSON).unwrap(),
        AnalyzerParams::defaults()
    );
    assert_eq!(
        AnalyzerParams::from_json("{}").unwrap(),
        AnalyzerParams::defaults()
    );
    let p = with(|p| {
        p.custom_stop_words = Some(vec!["fox".into(), "dög\"".into()]);
        p.max_token_length = None;
    });
    let j = p.to_json();
    assert!(j.contains(r#""max_token_length":null"#), "{j}");
    assert!(j.contains(r#""custom_stop_words":["fox","dög\""]"#), "{j}");
    assert_eq!(AnalyzerParams::from_json(&j).unwrap(), p);
}

#[test]
fn missing_keys_take_pylance14_defaults() {
    let p = AnalyzerParams::from_json(r#"{"base_tokenizer":"ngram"}"#).unwrap();
    assert!(!p.stem && !p.remove_stop_words);
    assert_eq!((p.min_ngram_length, p.max_ngram_length), (3, 3));
    let p = AnalyzerParams::from_json(r#"{"stem":true,"base_tokenizer":"ngram"}"#).unwrap();
    assert!(p.stem && !p.remove_stop_words);
    let p = AnalyzerParams::from_json(r#"{"max_token_length":null}"#).unwrap();
    assert_eq!(p.max_token_length, None);
    assert!(p.stem && p.remove_stop_words && p.ascii_folding && p.lower_case);
}

#[test]
fn unknown_keys_round_trip_in_place() {
    let src = DEFAULT_JSON
        .replacen('{', r#"{"zeroth":[1,{"a":"}"}],"#, 1)
        .replace(
            r#""stem":true,"#,
            r#""stem":true,"new_flag":{"x":[1,2]},"also":"a,\"b\":c","#,
        )
        .replace("false}", r#"false,"last":null}"#);
    let p = AnalyzerParams::from_json(&src).unwrap();
    assert_eq!(p.to_json(), src);
    let mut q = p.clone();
    q.stem = false;
    assert!(q
        .to_json()
        .contains(r#""stem":false,"new_flag":{"x":[1,2]},"also""#));
}

#[test]
fn hostile_json_is_a_typed_error() {
    for bad in [
        "",
        "[]",
        "null",
        "1",
        "\"simple\"",
        "{",
        r#"{"stem":"yes"}"#,
        r#"{"stem":null}"#,
        r#"{"lower_case":1}"#,
        r#"{"base_tokenizer":3}"#,
        r#"{"language":["English"]}"#,
        r#"{"max_token_length":-1}"#,
        r#"{"max_token_length":4.5}"#,
        r#"{"max_token_length":"40"}"#,
        r#"{"max_token_length":1e400}"#,
        r#"{"min_ngram_length":-3}"#,
        r#"{"min_ngram_length":4294967296}"#,
        r#"{"max_ngram_length":100000000000000000000}"#,
        r#"{"max_ngram_length":1e12}"#,
        r#"{"block_size":true}"#,
        r#"{"custom_stop_words":"the"}"#,
        r#"{"custom_stop_words":["the",1]}"#,
        r#"{"custom_stop_words":[["the"]]}"#,
        r#"{"stem":true,"stem":false}"#,
    ] {
        let e = err(bad);
        assert!(!e.is_empty(), "{bad}");
    }
    // Deep nesting is refused by serde_json's recursion limit, not by a stack overflow.
    let deep = format!(r#"{{"x":{}{}}}"#, "[".repeat(100_000), "]".repeat(100_000));
    err(&deep);
    // A huge hostile value is not echoed in full.
    let long = format!(r#"{{"stem":"{}"}}"#, "y".repeat(1 << 20));
    assert!(err(&long).len() < 300);
}

#[test]
fn analyzer_errors_name_the_parameter() {
    // a dictionary tokenizer without a model home names the variable to set
    let e = analyzer_err(&with(|p| p.base_tokenizer = "jieba/default".into()));
    assert!(
        e.contains("base tokenizer 'jieba/default'") && e.contains("LANCE_LANGUAGE_MODEL_HOME"),
        "{e}"
    );
    let e = analyzer_err(&with(|p| p.base_tokenizer = "lindera/ipadic".into()));
    assert!(e.contains("'lindera/ipadic' is not supported"), "{e}");
    let e = analyzer_err(&with(|p| p.base_tokenizer = "foo".into()));
    assert!(e.contains("unknown base tokenizer 'foo'"), "{e}");
    // pylance knows `icu` and `icu/split` only.
    for bad in ["icu/", "icu/foo", "ICU", "icu/split/x"] {
        let e = analyzer_err(&with(|p| p.base_tokenizer = bad.into()));
        assert!(
            e.contains(&format!("unknown base tokenizer '{bad}'")),
            "{e}"
        );
    }
    let e = analyzer_err(&with(|p| p.language = "english".into()));
    assert!(e.contains("unknown language 'english'"), "{e}");
    let e = analyzer_err(&with(|p| {
        p.base_tokenizer = "ngram".into();
        p.min_ngram_length = 0;
    }));
    assert!(e.contains("min_ngram_length must be greater than 0"), "{e}");
    let e = analyzer_err(&with(|p| {
        p.base_tokenizer = "ngram".into();
        p.min_ngram_length = 4;
    }));
    assert!(
        e.contains("min_ngram_length (4) must not be greater than max_ngram_length (3)"),
        "{e}"
    );
    let e = analyzer_err(&with(|p| p.lance_tokenizer = "code".into()));
    assert!(e.contains("lance_tokenizer 'code'"), "{e}");
    // Ngram lengths are not checked for the other tokenizers (pylance neither).
    with(|p| p.min_ngram_length = 0).analyzer().unwrap();
}

#[test]
fn huge_ngram_lengths_allocate_nothing_big() {
    // pylance accepts any u32 lengths; the grams are bounded by the text.
    let p = with(|p| {
        p.base_tokenizer = "ngram".into();
        (p.stem, p.remove_stop_words) = (false, false);
        p.min_ngram_length = 2;
        p.max_ngram_length = u32::MAX;
    });
    assert_eq!(
        texts(&p, "hello"),
        ["he", "hel", "hell", "hello", "el", "ell", "ello", "ll", "llo", "lo"]
    );
    let p = with(|p| {
        p.base_tokenizer = "ngram".into();
        p.min_ngram_length = u32::MAX;
        p.max_ngram_length = u32::MAX;
    });
    assert!(texts(&p, "hello").is_empty());
}

#[test]
fn empty_and_blank_values() {
    let d = AnalyzerParams::defaults();
    assert!(toks(&d, "").is_empty());
    assert!(toks(&d, "   ").is_empty());
    let raw = with(|p| p.base_tokenizer = "raw".into());
    assert_eq!(toks(&raw, ""), [(String::new(), 0)]);
    assert_eq!(toks(&raw, "   "), [("   ".to_string(), 0)]);
    let ngram = with(|p| p.base_tokenizer = "ngram".into());
    assert!(toks(&ngram, "").is_empty());
    assert!(toks(&ngram, "ab").is_empty());
    assert_eq!(texts(&ngram, "abc"), ["abc"]);
}

#[test]
fn positions_count_removed_tokens() {
    let d = AnalyzerParams::defaults();
    assert!(toks(&d, "the of and THE").is_empty());
    let t = toks(&d, "The Quick Brown Fox jumps over the lazy dog!");
    let want = [
        ("quick", 1),
        ("brown", 2),
        ("fox", 3),
        ("jump", 4),
        ("lazi", 7),
        ("dog", 8),
    ];
    assert_eq!(t, want.map(|(s, p)| (s.to_string(), p)));
    // Over-long tokens leave a gap too.
    let p = with(|p| p.max_token_length = Some(10));
    assert_eq!(
        toks(&p, "the cat xxxxxxxxxxxxxxxxxxxx dog"),
        [("cat".to_string(), 1), ("dog".to_string(), 3)]
    );
}

#[test]
fn max_token_length_boundary_is_in_bytes_and_exclusive() {
    let d = with(|p| {
        p.stem = false;
        p.ascii_folding = false;
    });
    let x39 = "x".repeat(39);
    assert_eq!(texts(&d, &format!("{x39} {}", "y".repeat(40))), [x39]);
    let e19 = "é".repeat(19);
    assert_eq!(texts(&d, &format!("{e19} {}", "é".repeat(20))), [e19]);
    // The length is taken before lower-casing: `İ` (2 bytes) becomes 3 bytes.
    let p = with(|p| p.max_token_length = Some(3));
    assert_eq!(texts(&p, "İ"), ["i\u{307}"]);
    let p = with(|p| p.max_token_length = Some(0));
    assert!(texts(&p, "a b c").is_empty());
    let p = with(|p| p.max_token_length = None);
    assert_eq!(texts(&p, &"z".repeat(1000)), ["z".repeat(1000)]);
}

#[test]
fn ngram_prefix_only() {
    let p = with(|p| {
        p.base_tokenizer = "ngram".into();
        (p.stem, p.remove_stop_words) = (false, false);
        p.min_ngram_length = 2;
        p.max_ngram_length = 3;
        p.prefix_only = true;
    });
    assert_eq!(
        toks(&p, "Hello world"),
        [("he".to_string(), 0), ("hel".to_string(), 0)]
    );
    let mut p = with(|p| {
        p.base_tokenizer = "ngram".into();
        (p.stem, p.remove_stop_words) = (false, false);
        p.min_ngram_length = 1;
        p.max_ngram_length = 10;
        p.prefix_only = true;
    });
    assert_eq!(texts(&p, "abcd"), ["a", "ab", "abc", "abcd"]);
    // pylance 11's ngram defaults: the grams are stemmed and stop-word filtered.
    (p.stem, p.remove_stop_words) = (true, true);
    p.stop_word_lists = StopWordLists::Nltk;
    assert_eq!(texts(&p, "abcd"), ["ab", "abc", "abcd"]);
    // Folding applies to each gram and may lengthen it.
    let p = with(|p| {
        p.base_tokenizer = "ngram".into();
        (p.stem, p.remove_stop_words) = (false, false);
        p.min_ngram_length = 4;
        p.max_ngram_length = 4;
    });
    assert_eq!(texts(&p, "traß"), ["trass"]);
}

#[test]
fn filter_order() {
    let d = AnalyzerParams::defaults();
    // Stop words are matched after stemming.
    assert_eq!(texts(&d, "having ourselves"), ["ourselv"]);
    // Folding comes last: the stemmer sees `café`, the stop list does not match `cafe`.
    let p = with(|p| p.custom_stop_words = Some(vec!["cafe".into()]));
    assert_eq!(texts(&p, "Cafés"), ["cafe"]);
    let p = with(|p| p.custom_stop_words = Some(vec!["cat".into()]));
    assert_eq!(
        toks(&p, "the cat the"),
        [("the".to_string(), 0), ("the".to_string(), 2)]
    );
    // custom_stop_words only acts with remove_stop_words.
    let p = with(|p| {
        p.custom_stop_words = Some(vec!["cat".into()]);
        p.remove_stop_words = false;
    });
    assert_eq!(texts(&p, "the cat"), ["the", "cat"]);
    // Case-sensitive stop words without lower-casing.
    let p = with(|p| p.lower_case = false);
    assert_eq!(texts(&p, "THE cat the"), ["THE", "cat"]);
    assert_eq!(
        texts(&d, "Café naïve Straße STRASSE Ærø ﬁnance İstanbul"),
        [
            "cafe",
            "naiv",
            "strasse",
            "strass",
            "aero",
            "financ",
            "i\u{307}stanbul"
        ]
    );
    assert_eq!(texts(&d, "ΣΑΣ"), ["σασ"]);
}

#[test]
fn stop_word_lists_of_11_12_and_14() {
    assert_eq!(ENGLISH_STOP_WORDS_NLTK.len(), 198);
    assert_eq!(ENGLISH_STOP_WORDS_PYLANCE14.len(), 149);
    let nltk: HashSet<_> = ENGLISH_STOP_WORDS_NLTK.iter().collect();
    assert!(ENGLISH_STOP_WORDS_PYLANCE14
        .iter()
        .all(|w| nltk.contains(w)));
    let ws14 = with(|p| p.base_tokenizer = "whitespace".into());
    let ws11 = with(|p| {
        p.base_tokenizer = "whitespace".into();
        p.stop_word_lists = StopWordLists::for_pylance_major(11);
    });
    assert_eq!(
        texts(&ws14, "Hello, World! don't C++ a-b"),
        ["hello,", "world!", "don't", "c++", "a-b"]
    );
    assert_eq!(
        texts(&ws11, "Hello, World! don't C++ a-b"),
        ["hello,", "world!", "c++", "a-b"]
    );
    assert_eq!(
        texts(&ws14, "no nor not i'm we're"),
        ["no", "nor", "not", "we'r"]
    );
    // With stemming, `we're` becomes `we'r` and is no stop word any more (pylance too).
    assert_eq!(texts(&ws11, "no nor not i'm we're"), ["we'r"]);
    // Other languages: tantivy's lists.
    let de = with(|p| p.language = "German".into());
    assert_eq!(texts(&de, "und der die das Haus Häuser"), ["haus", "haus"]);
}

#[test]
fn ascii_folding_is_pylances() {
    assert_eq!(lists::fold_table().len(), 2207);
    assert!(lists::fold_table().windows(2).all(|w| w[0].0 < w[1].0));
    for (c, want) in [
        ('½', Some("12")),
        ('℃', Some("C")),
        ('Ǆ', Some("DZ")),
        ('ß', Some("ss")),
        ('Æ', Some("AE")),
        ('\u{a0}', Some(" ")),
        ('⒇', Some("(20)")),
        ('ĸ', Some("k")),
        ('«', None),
        ('“', None),
        ('ȸ', None),
        ('µ', None),
        ('\u{301}', None),
        ('a', None),
    ] {
        assert_eq!(fold_char(c), want, "{c:?}");
    }
    let p = with(|p| {
        p.base_tokenizer = "whitespace".into();
        p.stem = false;
        p.lower_case = false;
    });
    assert_eq!(
        texts(&p, "ﬀ ß Œ ¼ ⅓ ① ℃ № ™ «» “quote”"),
        [
            "ff",
            "ss",
            "OE",
            "14",
            "13",
            "1",
            "C",
            "No",
            "TM",
            "«»",
            "“quote”"
        ]
    );
}

fn plain(base: &str) -> AnalyzerParams {
    with(|p| {
        p.base_tokenizer = base.into();
        (p.stem, p.remove_stop_words, p.lower_case, p.ascii_folding) = (false, false, false, false);
        p.max_token_length = None;
    })
}

#[test]
fn icu_segments_like_pylance() {
    let icu = plain("icu");
    let split = plain("icu/split");
    let text = "hello_world こんにちは世界 東京タワー 中文分词测试";
    assert_eq!(
        texts(&icu, text),
        [
            "hello_world",
            "こんにちは",
            "世界",
            "東京",
            "タワー",
            "中文",
            "分词",
            "测试"
        ]
    );
    assert_eq!(
        texts(&split, text),
        [
            "hello",
            "world",
            "こんにちは",
            "世界",
            "東京",
            "タワー",
            "中文",
            "分词",
            "测试"
        ]
    );
    // Punctuation, spaces and emoji take no position; ICU keeps `U.S.A`, `3.14`,
    // `1,000`, `don't` whole and `icu/split` cuts them.
    let text = "don't e-mail C++ U.S.A. 3.14 1,000 😀 x😀y";
    assert_eq!(
        toks(&icu, text),
        [
            ("don't", 0),
            ("e", 1),
            ("mail", 2),
            ("C", 3),
            ("U.S.A", 4),
            ("3.14", 5),
            ("1,000", 6),
            ("x", 7),
            ("y", 8)
        ]
        .map(|(s, p)| (s.to_string(), p))
    );
    assert_eq!(
        texts(&split, text),
        ["don", "t", "e", "mail", "C", "U", "S", "A", "3", "14", "1", "000", "x", "y"]
    );
    // Dictionary segmentation of Thai; `icu/split` also cuts at non-alphabetic marks.
    assert_eq!(
        texts(&icu, "ภาษาไทยง่ายนิดเดียว"),
        ["ภาษา", "ไทย", "ง่าย", "นิด", "เดียว"]
    );
    assert_eq!(
        texts(&split, "ภาษาไทยง่ายนิดเดียว"),
        ["ภาษา", "ไทย", "ง", "าย", "นิด", "เดียว"]
    );
    assert_eq!(
        texts(&split, "_x_ __init__ a\u{ad}b"),
        ["x", "init", "a", "b"]
    );
    assert_eq!(
        texts(&icu, "_x_ __init__ a\u{ad}b"),
        ["_x_", "__init__", "a\u{ad}b"]
    );
    for p in [&icu, &split] {
        assert!(toks(p, "").is_empty());
        assert!(toks(p, " \t\n!? 😀 ").is_empty());
        assert!(toks(p, "_").is_empty());
    }
}

#[test]
fn icu_filters_and_stop_words_of_every_language() {
    let mut p = with(|p| p.base_tokenizer = "icu".into());
    let text = "The lazy dog, le chat, der Hund, 的 猫 1 don't";
    // pylance 14: `the`, `le`, `der`, `的` are stop words whatever the language;
    // `dog`, `1`, `don't` are not.
    assert_eq!(
        toks(&p, text),
        [
            ("lazi", 1),
            ("dog", 2),
            ("chat", 4),
            ("hund", 6),
            ("猫", 8),
            ("1", 9),
            ("don't", 10)
        ]
        .map(|(s, p)| (s.to_string(), p))
    );
    p.language = "French".into();
    assert_eq!(
        texts(&p, text),
        ["lazy", "dog", "chat", "hund", "猫", "1", "don't"]
    );
    // pylance 11 / 12: `dog` (Danish), `1` (Chinese) and `don't` are stop words too.
    p.language = "English".into();
    p.stop_word_lists = StopWordLists::Nltk;
    assert_eq!(texts(&p, text), ["lazi", "chat", "hund", "猫"]);
    // custom_stop_words replace the lists.
    p.custom_stop_words = Some(vec!["chat".into()]);
    assert_eq!(
        texts(&p, text),
        ["the", "lazi", "dog", "le", "der", "hund", "的", "猫", "1", "don't"]
    );
    assert_eq!(icu::icu_stop_words(StopWordLists::Nltk).len(), 5099);
    assert_eq!(icu::icu_stop_words(StopWordLists::Pylance14).len(), 3837);
    // A stop word reached through stemming: `,` + fatha is one token (the mark is
    // alphabetic), which the Arabic stemmer turns into `,`, a stop word (pylance too).
    let p = with(|p| {
        p.base_tokenizer = "icu".into();
        p.language = "Arabic".into();
    });
    assert_eq!(texts(&p, ",\u{64e} hcs"), ["hcs"]);
    // Over-long tokens leave a gap; the length is in bytes.
    let p = with(|p| {
        p.base_tokenizer = "icu/split".into();
        p.max_token_length = Some(7);
    });
    assert_eq!(
        toks(&p, "東京タワー hello_world"),
        [("東京", 0), ("hello", 2), ("world", 3)].map(|(s, p)| (s.to_string(), p))
    );
}

#[test]
fn without_stemming() {
    let a = AnalyzerParams::defaults().analyzer().unwrap();
    let mut plain = a.without_stemming().unwrap();
    let mut out = Vec::new();
    plain.tokens("running foxes the", &mut out);
    let got: Vec<_> = out.iter().map(|t| t.text.as_str()).collect();
    assert_eq!(got, ["running", "foxes"]);
    assert!(a.params().stem && !plain.params().stem);
}
