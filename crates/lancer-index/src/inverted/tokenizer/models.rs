//! Language models of the dictionary-based base tokenizers: where they are read from and
//! the `jieba/*` tokenizer over them (docs/fts-index-format.md §10).
//!
//! pylance ships no models: a base tokenizer `jieba/<name>` (`jieba` alone is
//! `jieba/default`) reads the folder `<LANCE_LANGUAGE_MODEL_HOME>/jieba/<name>`, whose
//! optional `config.json` names the main dictionary (`"main"`, default `dict.txt`) and
//! user dictionaries (`"users"`), paths relative to the folder; dictionaries are jieba's
//! `word [frequency] [tag]` lines. The segmentation is jieba-rs's (the version pylance
//! 14 ships) in search mode with its built-in HMM for unknown words; a token's position is
//! the index of its first character in the text, so positions count characters, not
//! tokens. `lindera/*` models (compiled Lindera dictionaries) are not read: the error
//! names the folder pylance would read.
//!
//! A [`LanguageModels`] is the session's folder plus the session's cache of loaded
//! dictionaries (a real dictionary takes a few hundred milliseconds to load), so every
//! index build and query of a session loads a model once.

use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use lancer_io::{Cache, Context};
use tantivy::tokenizer::{Token as TvToken, TokenStream, Tokenizer};

use super::invalid;
use crate::{IndexError, Result};

/// The environment variable pylance reads the models' folder from.
pub const LANGUAGE_MODEL_HOME_ENV: &str = "LANCE_LANGUAGE_MODEL_HOME";

/// Where a session's language models are and the ones loaded so far. The default has no
/// folder: dictionary tokenizers are refused, naming [`LANGUAGE_MODEL_HOME_ENV`].
#[derive(Clone, Default)]
pub struct LanguageModels {
    home: Option<PathBuf>,
    cache: Option<Arc<Cache>>,
}

impl std::fmt::Debug for LanguageModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LanguageModels")
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}

/// Two handles are the same models when they read the same folder.
impl PartialEq for LanguageModels {
    fn eq(&self, other: &Self) -> bool {
        self.home == other.home
    }
}

impl LanguageModels {
    /// Models read from `home`, loaded ones kept in `cache` (none: loaded per analyzer).
    pub fn new(home: Option<PathBuf>, cache: Option<Arc<Cache>>) -> Self {
        LanguageModels { home, cache }
    }

    /// The models of a session's context.
    pub fn of(ctx: &Context) -> Self {
        Self::new(
            ctx.language_model_home().map(Path::to_path_buf),
            Some(ctx.model_cache().clone()),
        )
    }

    /// The folder models are read from.
    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    /// The folder of model `name` (`jieba/default`, …), checked to stay inside the home.
    fn folder(&self, name: &str) -> Result<PathBuf> {
        let Some(home) = &self.home else {
            return Err(invalid(format!(
                "base tokenizer '{name}' reads its language model from a folder, and none \
                 is set: set {LANGUAGE_MODEL_HOME_ENV} (or the session's language model \
                 home) to the folder that holds {name}/"
            )));
        };
        Ok(home.join(check_name(name)?))
    }

    /// The jieba tokenizer of base tokenizer `name` (`jieba` or `jieba/<model>`).
    pub(super) fn jieba(&self, name: &str) -> Result<JiebaTokenizer> {
        let name = if name == "jieba" {
            "jieba/default"
        } else {
            name
        };
        let dir = self.folder(name)?;
        let key = dir.to_string_lossy().into_owned();
        if let Some(cache) = &self.cache {
            if let Some(j) = cache.get::<jieba_rs::Jieba>("jieba", key.as_bytes()) {
                return Ok(JiebaTokenizer(j));
            }
        }
        let j = Arc::new(load_jieba(name, &dir)?);
        if let Some(cache) = &self.cache {
            cache.insert("jieba", key.as_bytes(), j.clone());
        }
        Ok(JiebaTokenizer(j))
    }

    /// The refusal of a `lindera/*` base tokenizer, naming the folder pylance reads.
    pub(super) fn lindera(&self, name: &str) -> IndexError {
        let place = match self.folder(name) {
            Ok(dir) => format!(
                "pylance 14 reads a compiled Lindera dictionary from {} (its config.yml and \
                 the dictionary it names)",
                dir.display()
            ),
            Err(_) => format!(
                "pylance 14 reads a compiled Lindera dictionary from \
                 <{LANGUAGE_MODEL_HOME_ENV}>/{name}"
            ),
        };
        invalid(format!(
            "base tokenizer '{name}' is not supported by Lancer: {place}; use 'jieba/…', \
             'icu' or 'ngram' for CJK text"
        ))
    }
}

/// The folder of model `name` relative to the language model home, `.` and `..` resolved
/// as pylance's path join resolves them (`jieba/../jieba/default` is `jieba/default`); a
/// name that leaves the home (more `..` than folders, or a root) is refused, so a
/// dataset's index settings cannot make Lancer read files elsewhere.
pub(super) fn check_name(name: &str) -> Result<PathBuf> {
    let mut rel = PathBuf::new();
    for c in Path::new(name).components() {
        let ok = match c {
            Component::Normal(part) => {
                rel.push(part);
                true
            }
            Component::CurDir => true,
            Component::ParentDir => rel.pop(),
            Component::RootDir | Component::Prefix(_) => false,
        };
        if !ok {
            return Err(invalid(format!(
                "base tokenizer '{name}': a model name is a folder inside the language \
                 model home; this one leaves it"
            )));
        }
    }
    Ok(rel)
}

/// `config.json` of a jieba model folder.
struct JiebaConfig {
    main: String,
    users: Vec<String>,
}

fn jieba_config(name: &str, dir: &Path) -> Result<JiebaConfig> {
    let path = dir.join("config.json");
    let mut config = JiebaConfig {
        main: "dict.txt".to_string(),
        users: Vec::new(),
    };
    if !path.exists() {
        return Ok(config);
    }
    let bad = |what: String| {
        invalid(format!(
            "base tokenizer '{name}': {} is not a valid jieba model config: {what} (it is \
             a JSON object with an optional \"main\" dictionary file and \"users\", a list \
             of user dictionary files)",
            path.display()
        ))
    };
    let text = std::fs::read_to_string(&path).map_err(|e| bad(e.to_string()))?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let obj = v
        .as_object()
        .ok_or_else(|| bad("not a JSON object".into()))?;
    match obj.get("main") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::String(m)) => config.main = m.clone(),
        Some(_) => return Err(bad("\"main\" is not a string".into())),
    }
    match obj.get("users") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Array(list)) => {
            for u in list {
                let u = u
                    .as_str()
                    .ok_or_else(|| bad("\"users\" holds a value that is not a string".into()))?;
                config.users.push(u.to_string());
            }
        }
        Some(_) => return Err(bad("\"users\" is not a list".into())),
    }
    Ok(config)
}

fn load_jieba(name: &str, dir: &Path) -> Result<jieba_rs::Jieba> {
    if !dir.is_dir() {
        return Err(invalid(format!(
            "base tokenizer '{name}': its model folder {} does not exist; put the model's \
             dict.txt (and an optional config.json) there, or point {LANGUAGE_MODEL_HOME_ENV} \
             at the folder that holds {name}/",
            dir.display()
        )));
    }
    let config = jieba_config(name, dir)?;
    let open = |file: &str, role: &str| -> Result<std::io::BufReader<std::fs::File>> {
        let path = dir.join(file);
        std::fs::File::open(&path)
            .map(std::io::BufReader::new)
            .map_err(|e| {
                invalid(format!(
                    "base tokenizer '{name}': cannot read its {role} {}: {e}",
                    path.display()
                ))
            })
    };
    let dict_error = |file: &str, role: &str, e: jieba_rs::Error| {
        invalid(format!(
            "base tokenizer '{name}': {role} {} is not a jieba dictionary: {e} (each line \
             is `word [frequency] [tag]`)",
            dir.join(file).display()
        ))
    };
    let mut jieba = jieba_rs::Jieba::with_dict(&mut open(&config.main, "dictionary")?)
        .map_err(|e| dict_error(&config.main, "dictionary", e))?;
    for user in &config.users {
        jieba
            .load_dict(&mut open(user, "user dictionary")?)
            .map_err(|e| dict_error(user, "user dictionary", e))?;
    }
    Ok(jieba)
}

/// jieba-rs's search-mode segmentation (HMM on) as a tantivy tokenizer.
#[derive(Clone)]
pub(super) struct JiebaTokenizer(Arc<jieba_rs::Jieba>);

/// The tokens of one text, handed out in order.
pub(super) struct VecTokenStream {
    tokens: Vec<TvToken>,
    next: usize,
    /// What `token()` gives before the first `advance` or after the last.
    blank: TvToken,
}

impl TokenStream for VecTokenStream {
    fn advance(&mut self) -> bool {
        if self.next < self.tokens.len() {
            self.next += 1;
            true
        } else {
            false
        }
    }

    fn token(&self) -> &TvToken {
        match self.next.checked_sub(1) {
            Some(i) => self.tokens.get(i).unwrap_or(&self.blank),
            None => &self.blank,
        }
    }

    fn token_mut(&mut self) -> &mut TvToken {
        match self.next.checked_sub(1) {
            Some(i) if i < self.tokens.len() => &mut self.tokens[i],
            _ => &mut self.blank,
        }
    }
}

impl Tokenizer for JiebaTokenizer {
    type TokenStream<'a> = VecTokenStream;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> VecTokenStream {
        let tokens = self
            .0
            .tokenize(text, jieba_rs::TokenizeMode::Search, true)
            .into_iter()
            .map(|t| TvToken {
                offset_from: t.byte_start,
                offset_to: t.byte_end,
                position: t.start,
                text: t.word.to_string(),
                position_length: t.end.saturating_sub(t.start),
            })
            .collect();
        VecTokenStream {
            tokens,
            next: 0,
            blank: TvToken::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inverted::tokenizer::AnalyzerParams;

    fn params(home: &Path, base: &str) -> AnalyzerParams {
        let mut p = AnalyzerParams::defaults();
        p.base_tokenizer = base.to_string();
        p.models = LanguageModels::new(Some(home.to_path_buf()), Some(Arc::new(Cache::new(2))));
        p
    }

    fn tokens(p: &AnalyzerParams, text: &str) -> Vec<(String, u32)> {
        let mut a = p.analyzer().expect("analyzer");
        let mut out = Vec::new();
        a.each_token(text, &mut |t, pos| out.push((t.to_string(), pos)));
        out
    }

    #[test]
    fn names_resolve_inside_the_home_only() {
        assert_eq!(
            check_name("jieba/default").ok(),
            Some(PathBuf::from("jieba/default"))
        );
        assert_eq!(
            check_name("jieba/./x/../default").ok(),
            Some(PathBuf::from("jieba/default"))
        );
        for bad in ["../jieba", "jieba/../../x", "/etc/jieba"] {
            let e = check_name(bad)
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(e.contains("leaves it"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_model_folder_config_and_dictionaries() {
        let dir = lancer_testkit::TempDir::new("jieba-models");
        let home = dir.path();
        let model = home.join("jieba/default");
        std::fs::create_dir_all(&model).expect("mkdir");
        std::fs::write(
            model.join("dict.txt"),
            "中国 100 ns\n人民 80 n\n中国人民 50 n\n银行 90\n",
        )
        .expect("dict");
        let p = params(home, "jieba");
        let got = tokens(&p, "中国人民银行 Bank");
        // search mode: the parts of a word before it, positions in characters; the
        // filters after (lower case)
        assert_eq!(
            got,
            vec![
                ("中国".to_string(), 0),
                ("人民".to_string(), 2),
                ("中国人民".to_string(), 0),
                ("银行".to_string(), 4),
                (" ".to_string(), 6),
                ("bank".to_string(), 7),
            ]
        );
        assert!(tokens(&p, "").is_empty());
        // loaded once per cache
        let cache = p.models.cache.clone().expect("cache");
        assert_eq!(cache.stats().entries, 1);
        tokens(&p, "银行");
        assert_eq!(cache.stats().entries, 1);

        // a config naming another main dictionary and a user dictionary
        let custom = home.join("jieba/custom");
        std::fs::create_dir_all(&custom).expect("mkdir");
        std::fs::write(custom.join("main.txt"), "中国 100\n").expect("main");
        std::fs::write(custom.join("mine.txt"), "人民银行 10 n\n").expect("user");
        std::fs::write(
            custom.join("config.json"),
            r#"{"main": "main.txt", "users": ["mine.txt"], "other": 1}"#,
        )
        .expect("config");
        let got = tokens(&params(home, "jieba/custom"), "人民银行");
        assert!(got.iter().any(|(t, _)| t == "人民银行"), "{got:?}");
    }

    #[test]
    fn errors_name_the_file_and_what_is_wrong() {
        let dir = lancer_testkit::TempDir::new("jieba-errors");
        let home = dir.path();
        let err = |base: &str| {
            params(home, base)
                .analyzer()
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(err("jieba/none").contains("does not exist"));
        assert!(err("jieba/none").contains(LANGUAGE_MODEL_HOME_ENV));
        let m = home.join("jieba/bad");
        std::fs::create_dir_all(&m).expect("mkdir");
        for (config, what) in [
            ("[1]", "not a JSON object"),
            (r#"{"main": 5}"#, "\"main\" is not a string"),
            (r#"{"users": "a"}"#, "\"users\" is not a list"),
            (r#"{"users": [1]}"#, "not a string"),
            ("{", "config.json"),
        ] {
            std::fs::write(m.join("config.json"), config).expect("config");
            let e = err("jieba/bad");
            assert!(
                e.contains(what) && e.contains("config.json"),
                "{config}: {e}"
            );
        }
        std::fs::write(m.join("config.json"), "{}").expect("config");
        assert!(err("jieba/bad").contains("dict.txt"));
        std::fs::write(m.join("dict.txt"), "中国 many\n").expect("dict");
        let e = err("jieba/bad");
        assert!(e.contains("dict.txt") && e.contains("many"), "{e}");
        // without a home the variable is named; lindera is refused naming its folder
        let mut p = AnalyzerParams::defaults();
        p.base_tokenizer = "jieba/default".into();
        let e = p
            .analyzer()
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains(LANGUAGE_MODEL_HOME_ENV), "{e}");
        assert!(p.check().is_ok());
        let e = err("lindera/ipadic");
        assert!(
            e.contains("lindera/ipadic") && e.contains("not supported"),
            "{e}"
        );
    }
}
