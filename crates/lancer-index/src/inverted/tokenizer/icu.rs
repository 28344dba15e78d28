//! The `icu` and `icu/split` base tokenizers of pylance 11–14 (docs/fts-index-format.md
//! §10.1), and the stop words those two tokenizers remove.
//!
//! Measured facts (identical in 11, 12 and 14 unless noted; 20 000 random mixed-script
//! strings per version give the same token streams here and there):
//! * Words are ICU4X's dictionary word segmentation (`icu_segmenter` 2.2.0, the version
//!   pylance ships, with its compiled data: dictionaries for Chinese / Japanese, Thai, Lao,
//!   Khmer and Burmese, no LSTM models), so `東京タワー` → `東京`, `タワー`.
//! * A segment is a token when one of its characters is `char::is_alphanumeric`: spaces,
//!   punctuation and emoji segments are dropped, `hello_world`, `U.S.A`, `3.14`, `1,000`,
//!   `don't` and `a\u{AD}b` stay whole (ICU's rules keep them in one segment), and dropped
//!   segments take no position (positions count tokens only).
//! * `icu/split` further cuts each token at every character that is not
//!   `char::is_alphanumeric` (as `simple` would), dropping empty pieces: `hello_world` →
//!   `hello`, `world`; `3.14` → `3`, `14`; also at non-alphabetic combining marks, so Thai
//!   `ง่าย` → `ง`, `าย` and Devanagari `नमस्ते` → `नमस`, `ते`.
//! * Unless `custom_stop_words` is given, `remove_stop_words` removes the words of *every*
//!   language's list at once, whatever `language` says. pylance 11 and 12:
//!   [`ICU_COMMON`] + [`ICU_ONLY_11_12`] = NLTK's English (198 words), Arabic, Chinese,
//!   Greek, Romanian, Tamil and Turkish lists, stopwords-iso's Japanese and Korean ones and
//!   the Snowball lists of the other twelve languages (so `dog`, Danish, and `1`, Chinese,
//!   are stop words). pylance 14: [`ICU_COMMON`] + [`ICU_ONLY_14`]; it no longer removes
//!   negations (`not`, `nicht`, `pas`, `nimic`, …), the English `-n't` forms and clitics,
//!   words that are content words elsewhere (`dog`, `cat`, `die`, `man`, `war`, `van`, …),
//!   digits, 604 of the 753 Chinese and 229 of the Arabic words, and it adds `её`, `неё`,
//!   `你們`, `嗎`, `我們`.
//!
//! How the lists were recorded: each version's `icu` analyzer was run on every word of the
//! public NLTK, stopwords-iso and Snowball lists and on every substring (up to 24
//! characters) of the lists pylance 14 embeds, a word being listed when the analyzer
//! removes it. Words that are never one token by themselves can still be stop words
//! through stemming: `,َ` (comma + fatha, one ICU segment) stems to `,` in Arabic, which
//! every version removes; such words were probed as word + mark or suffix under each
//! stemmer. The 11 / 12 lists hold every word of their source lists except those with a
//! space (which no token contains); every probe agreed with that. The 14 lists hold the
//! words that could be probed; a word of 14's lists that no probe reached (compounds the
//! dictionary always splits, punctuation runs) is missing: no token reached it.

use std::collections::HashSet;
use std::sync::OnceLock;

use icu_segmenter::iterators::WordBreakIterator;
use icu_segmenter::options::WordBreakInvariantOptions;
use icu_segmenter::scaffold::Utf8;
use icu_segmenter::{WordSegmenter, WordSegmenterBorrowed};
use tantivy::tokenizer::{Token as TvToken, TokenFilter, TokenStream, Tokenizer};

use super::StopWordLists;

/// ICU4X's dictionary word segmenter with its compiled data (built once).
fn segmenter() -> WordSegmenterBorrowed<'static> {
    static SEGMENTER: OnceLock<WordSegmenterBorrowed<'static>> = OnceLock::new();
    *SEGMENTER.get_or_init(|| WordSegmenter::new_dictionary(WordBreakInvariantOptions::default()))
}

/// The `icu` (`split == false`) or `icu/split` base tokenizer.
#[derive(Clone)]
pub(super) struct IcuTokenizer {
    segmenter: WordSegmenterBorrowed<'static>,
    split: bool,
    token: TvToken,
}

impl IcuTokenizer {
    pub(super) fn new(split: bool) -> Self {
        IcuTokenizer {
            segmenter: segmenter(),
            split,
            token: TvToken::default(),
        }
    }
}

impl Tokenizer for IcuTokenizer {
    type TokenStream<'a> = IcuTokenStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> IcuTokenStream<'a> {
        self.token.reset();
        let mut breaks = self.segmenter.segment_str(text);
        // The first break is 0 (none for an empty text).
        let start = breaks.next().unwrap_or(text.len());
        IcuTokenStream {
            text,
            breaks,
            segment_end: start,
            cursor: start,
            split: self.split,
            in_segment: false,
            token: &mut self.token,
        }
    }
}

pub(super) struct IcuTokenStream<'a> {
    text: &'a str,
    breaks: WordBreakIterator<'static, 'a, Utf8>,
    /// End of the current segment.
    segment_end: usize,
    /// `icu/split`: where the next piece of the current segment is looked for.
    cursor: usize,
    split: bool,
    /// `icu/split`: the current segment still has pieces to look at.
    in_segment: bool,
    token: &'a mut TvToken,
}

impl IcuTokenStream<'_> {
    fn emit(&mut self, from: usize, to: usize) {
        let t = &mut *self.token;
        t.text.clear();
        t.text.push_str(&self.text[from..to]);
        t.offset_from = from;
        t.offset_to = to;
        t.position = t.position.wrapping_add(1);
    }

    /// `icu/split`: the next alphanumeric run of the current segment, from `cursor` on.
    fn next_piece(&mut self) -> Option<(usize, usize)> {
        let base = self.cursor;
        let mut start = None;
        for (i, c) in self.text[base..self.segment_end].char_indices() {
            match (c.is_alphanumeric(), start) {
                (true, None) => start = Some(base + i),
                (false, Some(from)) => {
                    self.cursor = base + i + c.len_utf8();
                    return Some((from, base + i));
                }
                _ => {}
            }
        }
        self.cursor = self.segment_end;
        start.map(|from| (from, self.segment_end))
    }
}

impl TokenStream for IcuTokenStream<'_> {
    fn advance(&mut self) -> bool {
        loop {
            if self.in_segment {
                if let Some((from, to)) = self.next_piece() {
                    self.emit(from, to);
                    return true;
                }
                self.in_segment = false;
            }
            let start = self.segment_end;
            let Some(end) = self.breaks.next() else {
                return false;
            };
            self.segment_end = end;
            let segment = &self.text[start..end];
            if !segment.chars().any(char::is_alphanumeric) {
                continue;
            }
            if self.split {
                self.cursor = start;
                self.in_segment = true;
            } else {
                self.emit(start, end);
                return true;
            }
        }
    }

    fn token(&self) -> &TvToken {
        self.token
    }

    fn token_mut(&mut self) -> &mut TvToken {
        self.token
    }
}

/// The stop words of `icu` / `icu/split` (all languages at once) for a pylance version.
pub(super) fn icu_stop_words(lists: StopWordLists) -> &'static HashSet<&'static str> {
    static NLTK: OnceLock<HashSet<&'static str>> = OnceLock::new();
    static PYLANCE14: OnceLock<HashSet<&'static str>> = OnceLock::new();
    let (cell, only) = match lists {
        StopWordLists::Nltk => (&NLTK, ICU_ONLY_11_12),
        StopWordLists::Pylance14 => (&PYLANCE14, ICU_ONLY_14),
    };
    cell.get_or_init(|| {
        ICU_COMMON
            .split_ascii_whitespace()
            .chain(only.split_ascii_whitespace())
            .collect()
    })
}

/// Removes the tokens of a static word set (the stop words of `icu` / `icu/split`).
#[derive(Clone, Copy)]
pub(super) struct StaticStopWords(pub(super) &'static HashSet<&'static str>);

impl TokenFilter for StaticStopWords {
    type Tokenizer<T: Tokenizer> = StaticStopWordsTokenizer<T>;

    fn transform<T: Tokenizer>(self, inner: T) -> StaticStopWordsTokenizer<T> {
        StaticStopWordsTokenizer {
            words: self.0,
            inner,
        }
    }
}

#[derive(Clone)]
pub(super) struct StaticStopWordsTokenizer<T> {
    words: &'static HashSet<&'static str>,
    inner: T,
}

impl<T: Tokenizer> Tokenizer for StaticStopWordsTokenizer<T> {
    type TokenStream<'a> = StaticStopWordsStream<T::TokenStream<'a>>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> Self::TokenStream<'a> {
        StaticStopWordsStream {
            words: self.words,
            tail: self.inner.token_stream(text),
        }
    }
}

pub(super) struct StaticStopWordsStream<S> {
    words: &'static HashSet<&'static str>,
    tail: S,
}

impl<S: TokenStream> TokenStream for StaticStopWordsStream<S> {
    fn advance(&mut self) -> bool {
        while self.tail.advance() {
            if !self.words.contains(self.tail.token().text.as_str()) {
                return true;
            }
        }
        false
    }

    fn token(&self) -> &TvToken {
        self.tail.token()
    }

    fn token_mut(&mut self) -> &mut TvToken {
        self.tail.token_mut()
    }
}

/// Stop words of `icu` / `icu/split` in pylance 11, 12 and 14 (3 832 words),
/// separated by ASCII white space.
pub(super) const ICU_COMMON: &str = r#"
! " $ % & ' ( ) * + , - . ; < = > ? @ \ ^ _ ` a aan abban abbia abbiamo abbiano abbiate aber
abia about above acaba acea aceasta această aceea aceeasi acei aceia acel acela acelasi
acele acelea acest acesta aceste acestea acestei acestia acestui aceşti aceştia ad adica af
after again against agl agli ahhoz ahogy ahol aia aibă aici aie aient aies ait aki akik
akkor al ala alatt ale alea algo algunas algunos all alla alle allem allen aller alles allo
allt als also alt alta altceva altcineva alte altfel alti altii altijd altul am ama amely
amelyek amelyekben amelyeket amelyet amelynek ami amikor amit amolyan amíg an anche and
anden ander andere anderem anderen anderer anderes anderm andern anderr anders annak ante
antes anume any ao aos apoi aquela aquelas aquele aqueles aquilo ar are arra arról as asa
aslında asta astea astfel asupra at atare atat atata atatea atatia ati atit atita atitea
atitia att atunci até au auch auf aurai auraient aurais aurait aurez auriez aurions aurons
auront aus aux av avaient avais avait avea avec avem avemmo avendo avesse avessero avessi
avessimo aveste avesti avete aveva avevamo avevano avevate avevi avevo avez aveţi aviez
avons avrai avranno avrebbe avrebbero avrei avremmo avremo avreste avresti avrete avrà avrò
avut avuta avute avuti avuto ayant ayez ayons azok azon azonban azt aztán azután azzal azért
aş aţi ba bare bazı be because been before begge bei being belki below belül ben benne
between bij biri birkaç birşey bis bist biz ble blei blev bli blir blitt blive bliver blivit
both bu but by bár både båe c ca can cand care careia carora caruia catre ce cea ceci ceea
cei ceilalti cel cela cele celor celà ces cet cette ceva che chi chiar ci cind cine cineva
cit citeva citiva coi col com come como con contra contro csak cu cual cuando cui cum cumva
cât câte câtva câţi cînd cît cîte cîtva cîţi că căci cărei căror cărui către da daar daca
dacă dagl dagli dai dal dall dalla dalle dallo damit dan dann dans dar das dasselbe dazu daß
de deasupra deci decit defa deg degl degli dei deim dein deine deinem deinen deiner deines
deira deires deja del dela delas dele deles dell della delle dello dem demselben denn denna
denne denselben depois der deras dere derer deres derselbe derselben des desde desi despre
dess dessa desselben dessen det detta dette deze deşi di dich did dies diese dieselbe
dieselben diesem diesen dieser dieses dig dina dintr dintre dir disse dit ditt diye do doar
doch doen does doing donde dort dos dov dove down drept dupa după durante durch during dus
dykk dykkar där då e ea each ebbe ebben ebbero ebbi ed eddig een eens efter eg egy egyes
egyik egyre egyéb ehhez ein eine einem einen einer eines einig einige einigem einigen
einiger einiges einmal eit ekkor el ela elas ele eles ella ellas elle ellen eller elles
ellos elég elő először előtt em emilyen enn ennek entre er era erais eram eran erano eras
eravamo eravate eres eri ero erre ert es esa esas ese eso esos essa essas esse essendo esses
esta estaba estabais estaban estabas estad estada estadas estado estados estamos estando
estar estaremos estará estarán estarás estaré estaréis estaría estaríais estaríamos estarían
estarías estas estava estavam este esteja estejam estejamos estemos estes esteve estive
estivemos estiver estivera estiveram estiverem estivermos estivesse estivessem estivéramos
estivéssemos esto estos estou estoy estuve estuviera estuvierais estuvieran estuvieras
estuvieron estuviese estuvieseis estuviesen estuvieses estuvimos estuviste estuvisteis
estuviéramos estuviésemos estuvo está estábamos estáis están estás estávamos estão esté
estéis estén estés etter että etwas euch eue euer eues eure eurem euren eurent eurer eures
eus eusse eussent eusses eussiez eussions eut eux ez ezek ezen ezt ezzel ezért eûmes eût
eûtes eğer eşti faccia facciamo facciano facciate faccio facemmo facendo facesse facessero
facessi facessimo faceste facesti faceva facevamo facevano facevate facevi facevo fai fanno
farai faranno farebbe farebbero farei faremmo faremo fareste faresti farete farà farò fata
fece fecero feci fel felé few fi fie fiecare fii fim fiu fiţi foarte foi fomos for fora
foram fordi forem formos fosse fossem fossero fossi fossimo fost foste fosti fra from från
fu fue fuera fuerais fueran fueras fueron fuese fueseis fuesen fueses fui fuimos fuiste
fuisteis fummo furent furono further fus fusse fussent fusses fussiez fussions fut fuéramos
fuésemos fôramos fôssemos för før fûmes fûtes für ge gegen geweest gewesen gibi gli ha haar
hab habe haben habida habidas habido habidos habiendo habremos habrá habrán habrás habré
habréis habría habríais habríamos habrían habrías habéis había habíais habíamos habían
habías had hadde hade hai haja hajam hajamos han hanem hanno hans har has hasta hatte hatten
havde have havemos having haya hayamos hayan hayas hayáis he he'd he'll he's heb hebben
heeft hei heidän heidät heihin heille heillä heiltä heissä heistä heitä hemos hende hendes
hennar henne hennes hepsi her here hers herself het hier hij him himself hin hinter his
hiszen hjå ho hogy hogyan hon honom hos hoss hossen houve houvemos houver houvera houveram
houverei houverem houveremos houveria houveriam houvermos houverá houverão houveríamos
houvesse houvessem houvéramos houvéssemos how hube hubiera hubierais hubieran hubieras
hubieron hubiese hubieseis hubiesen hubieses hubimos hubiste hubisteis hubiéramos hubiésemos
hubo hun hur hva hvad hvem hver hvilke hvilken hvis hvor hvordan hvorfor há hão hän häneen
hänelle hänellä häneltä hänen hänessä hänestä hänet häntä här i i'd i'll i'm i've ia iar ich
ici iemand iets if ihm ihn ihnen ihr ihre ihrem ihren ihrer ihres ii ik il ile ill. illetve
ils ilyen ilyenkor im imi in inainte inapoi inca incit ind indem inni inom ins insa into
intr intre io is ise isi ismét ison isso ist isto it it'd it'll it's iti its itse itself itt
için j ja jag je jede jedem jeden jeder jedes jeg jene jenem jenen jener jenes jer jetzt jo
johon joiden joihin joiksi joilla joille joilta joina joissa joista joita joka joksi jolla
jolle jolta jona jonka jos jossa josta jota jotka ju just já kan kann kanssa keiden keihin
keiksi keille keillä keiltä keinä keissä keistä keitä kell kellett keneen keneksi kenelle
kenellä keneltä kenen kenenä kenessä kenestä kenet keresztül ketkä ketä kez ki kim kon
korleis korso koska kuin kuka kun kunde kunne kunnen kva kvar kvarhelst kven kvi kvifor
kívül können könnte között közül l la las le legalább legyen lehet lehetett lei lenne lenni
les lesz lett leur leurs lhe lhes li lo lor loro los lui lângă lîngă maar maga magát mai
mais majd manche manchem manchen mancher manches mange mas me mea med medan meer meg meget
mei meidän meidät meihin meille meillä meiltä mein meine meinem meinen meiner meines meissä
meistä meitä mele mellan mellett mellom mely melyek mereu mert mes mesmo met meu meus mi mia
mich mie miei mig mihin mij mijn mikor miksi mikä mille millä miltä milyen mina minden
mindenki mindent mindig mine minha minhas minkä mintha minua minulla minulle minulta minun
minussa minusta minut minuun minä mio mir mis missä mistä mit mitkä mitt mitä mivel miért
moet moi mon more most mot mu mucho muchos muito mukaan mult multa multe multi multă mulţi
muss musste mutta muy my mycket mykje myself már más másik még même mí mía mías míg mío míos
mü mă mı na naar nach nagyon nas nasıl ned neden negl negli nei nekem neki nel nell nella
nelle nello nerde nerede nereye niiden niihin niiksi niille niillä niiltä niin niinä niissä
niistä niitä niste niye niçin nişte noastre noastră noch noe noen nog noget nogle noi noiden
noihin noiksi noilla noille noilta noin noina noissa noista noita noka noko nokon nokor
nokre nos nosotras nosotros nossa nossas nosso nossos nostra nostre nostri nostro nostru
notre noua nous now noştri nuestra nuestras nuestro nuestros num numa numai nuo nur nyt
näiden näihin näiksi näille näillä näiltä näinä näissä näistä näitä nämä när nå någon något
några når néha néhány nós ob och oder of off og også ole olemme olen olet olette oli olimme
olin olisi olisimme olisin olisit olisitte olisivat olit olitte olivat olla olleet ollut
olyan om omdat on onder only ons ont ook op opp or ori oricare orice oricine oricum oricând
oricât oricînd oricît oriunde os oss other otra otras otro otros ott ou our ours ourselves
out ovat over own pai par para parca pe pedig pela pelas pelo pelos pentru per perché pero
persze peste pic pina più poate poco por porque pot pour prea prin putini puţin puţina
puţină până på pînă qu qual quale quando quanta quante quanti quanto que quel quella quelle
quelles quelli quello quels quem questa queste questi questo qui quien quienes qué re reeds
rá sa sai saját same samma samme sanki sarai saranno sarebbe sarebbero sarei saremmo saremo
sareste saresti sarete sarà sarò sau se seamos sean sedan seg sehr sein seine seinem seinen
seiner seines seja sejam sejamos sekä selbst selv sen sera serai seraient serais serait
seras serei seremos serez seria seriam seriez serions serons seront será serán serás serão
seré seréis sería seríais seríamos serían serías ses seu seus seáis she she'd she'll she's
should should've si sia siamo siano siate sich sidan siden sido sie siendo siete sig siihen
siinä siitä siksi sille sillä siltä sina sind sint sintem sinua sinulla sinulle sinulta
sinun sinussa sinusta sinut sinuun sinä sitt sitä siz själv sjøl skal skulle slik so sobre
soi soient sois soit sok sokat sokkal solche solchem solchen solcher solches soll sollte som
some somme somos somt sondern sono sonst sont sou soyez soyons spre sta stai stando stanno
starai staranno starebbe starebbero starei staremmo staremo stareste staresti starete starà
starò stava stavamo stavano stavate stavi stavo stemmo stesse stessero stessi stessimo
steste stesti stette stettero stetti stia stiamo stiano stiate sto su sua suas sub such sue
sugl sugli sui suis sul sull sulla sulle sullo sunt suntem sunteţi suo suoi sur sus suya
suyas suyo suyos szemben szerint szinte számára são så sådan sådana sådant sånn só să săi
său ta tai talán también também tanto te tegen tehát teidän teidät teihin teille teillä
teiltä teissä teistä teitä tem temos tendremos tendrá tendrán tendrás tendré tendréis
tendría tendríais tendríamos tendrían tendrías tened tenemos tenga tengamos tengan tengas
tengo tengáis tenha tenham tenhamos tenho tenida tenidas tenido tenidos teniendo tenéis
tenía teníais teníamos tenían tenías terei teremos teria teriam terá terão teríamos tes teu
teus teve than that that'll the their theirs them themselves then there these they they'd
they'll they're they've thi this those through ti tiene tienen tienes til till tine tinha
tinham tive tivemos tiver tivera tiveram tiverem tivermos tivesse tivessem tivéramos
tivéssemos to toata toate toată toch tocmai todo todos toen toi ton too toti totul totusi
totuşi tovább továbbá toţi tra tu tua tuas tue tuo tuohon tuoi tuoksi tuolla tuolle tuolta
tuon tuona tuossa tuosta tuota tus tutti tutto tuturor tuve tuviera tuvierais tuvieran
tuvieras tuvieron tuviese tuvieseis tuviesen tuvieses tuvimos tuviste tuvisteis tuviéramos
tuviésemos tuvo tuya tuyas tuyo tuyos tähän täksi tälle tällä tältä tämä tämän tänä tässä
tästä tätä tínhamos több tú tüm tăi tău u ud ugyanis uit ul ului um uma un una und unde
under undeva une unei uneia unele uneori unii unor unora unos uns unse unsem unsen unser
unses unter until unui unuia unul up upp ut után utána uw v va vaan vad vagy vagyis vagyok
vai vaikka valaki valami valamint való vannak vara varför varit varje vars vart varte ved
veel vele vem vere verte very veya vid viel vil vilka vilkas vilken vilket ville vissza
viszont voastre voastră você vocês voi volna volt voltak voltam voltunk vom von voor vor
vore vors vos vosotras vosotros vostra vostre vostri vostro vostru votre vous vouă voştri
vreo vreun vuestra vuestras vuestro vuestros vår våra vårt være været vært vă waren warst
was wat we we'd we'll we're we've weg weil weiter welche welchem welchen welcher welches
wenn werd werde werden were wezen what when where which while who whom why wie wieder wil
will wir wird wirst with wo wollen wollte worden wordt während würde würden ya yani yli yo
you you'd you'll you're you've your yours yourself yourselves zal ze zelf zich zij zijn zo
zou zu zum zur zwar zwischen | ~ · à às által általában át än är å åt çünkü è él én éppen
éramos és étaient étais était étant étiez étions êtes így îi îl îmi în îţi össze över úgy
újra über ăla ălea ăsta ăstea ăştia ő ők őket şey şi şu ţi ţie αλλα αν αντι απο αυτα αυτεσ
αυτη αυτο αυτοι αυτοσ αυτουσ αυτων αἱ αἳ αἵ αὐτόσ αὐτὸς αὖ γάρ γα γε για γοῦν γὰρ δέ δή δαί
δαὶ δε διά διὰ δὲ δὴ εαν ειμαι ειμαστε ειναι εισαι ειστε εκεινα εκεινεσ εκεινη εκεινο
εκεινοι εκεινοσ εκεινουσ εκεινων ενω επ επι εἰ εἰμί εἰμὶ εἰς εἰσ εἴ εἴμι εἴτε η θα ισωσ κ
καί καίτοι καθ και κατ κατά κατα κατὰ καὶ κι κἀν κἂν μέν μα με μεθ μετ μετά μετα μετὰ μἐν
μὲν μὴν να ο οι ομωσ οπωσ οσο οτι οἱ οἳ οἷς οὓς οὕτω οὕτως οὕτωσ οὖν οὗ οὗτος οὗτοσ παρ παρά
παρα παρὰ περί περὶ ποια ποιεσ ποιο ποιοι ποιοσ ποιουσ ποιων ποτε που ποῦ προ προσ πρόσ πρὸ
πρὸς πως πωσ σε στη στην στο στον σόσ σύ σύν σὸς σὺ σὺν τά τήν τί τίς τίσ τα ταῖς τε την τησ
τι τινα τις τισ το τοί τοι τοιοῦτος τοιοῦτοσ τον τοτε του τούσ τοὺς τοῖς τοῦ των τό τόν τότε
τὰ τὰς τὴν τὸ τὸν τῆς τῆσ τῇ τῶν τῷ ωσ а без более больше будет будто бы был была были было
быть в вам вас вдруг ведь во вот впрочем все всегда всего всех всю вы где да даже для до
другой его ее ей ему если есть еще ж же за зачем здесь и из или им иногда их к кажется как
какая какой когда конечно кто куда ли лучше между меня мне много может можно мой моя мы на
над надо наконец нас него нее ней нибудь ним них но ну о об он она они опять от перед по под
после потом потому почти при про раз разве с сам свою себе себя сегодня сейчас со совсем так
такой там тебя тем теперь то тогда того тоже только том тот тут ты у уж уже хорошо хоть чего
чем через что чтоб чтобы чуть эти этого этой этом этот эту я ءَ آض آمينَ آناء آنفا آه آها
آهاً آهٍ آهِ آي أبدا أبو أبٌ أجل أجمع أخبر أخذ أخو أخٌ أرى أصبح أصلا أضحى أف أفٍّ أقبل أقل
أكثر أل ألا أم أما أمام أمامك أمامكَ أمد أمس أمسى أمّا أن أنا أنت أنتم أنتما أنتن أنتِ أنشأ
أنى أنًّ أنّى أهلا أو أوشك أولئك أولاء أولالك أوه أوّهْ أى أي أيا أيضا أين أينما أيها أيّ
أيّان أُفٍّ إذ إذا إذاً إذما إذن إزاء إلا إلى إليك إليكم إليكما إليكن إليكنّ إليكَ إلَيْكَ
إلّا إما إمّا إن إنا إنما إنه إنَّ إى إي إياك إياكم إياكما إياكن إيانا إياه إياها إياهم
إياهما إياهن إياي إيه إيهٍ ابتدأ اخلولق ارتدّ استحال الآن الألاء الألى التي الذي الذين
اللائي اللاتي اللتان اللتيا اللتين اللذان اللذين اللواتي انبرى انقلب بؤسا بئس بات بخ بخٍ بسّ
بضع بطآن بعد بعدا بعض بغتة بك بكم بكما بكن بل بلى بما بماذا بمن بنا به بها بهم بهما بهن بي
بيد بين بَسْ بَلْهَ تارة تانِ تانِك تبدّل تجاه تحت تحوّل تخذ تعسا تفعلان تفعلون تفعلين تلقاء
تلك تلكم تلكما ته تي تين تينك تَيْنِ تِه تِي ثم ثمة ثمنمئة ثمَّ ثمّ ثمّة جعل جلل جميع جير
حار حاشا حاي حبذا حبيب حتى حجا حدَث حرى حسب حقا حمدا حمو حمٌ حيث حيثما حين حيَّ حَذارِ خاصة
خال خبَّر خلا خلافا خلف دواليك دون دونك ذا ذات ذاك ذان ذانك ذانِ ذلك ذلكم ذلكما ذلكن ذه ذو
ذوا ذواتا ذواتي ذي ذيت ذين ذينك ذَيْنِ ذِه ذِي راح رجع رويدك ريث رُبَّ زود ساء سبحان سحقا
سرا سرعان سمعا سوف سوى شبه شتان شتانَ شرع شمال شَتَّانَ صار صباح صبرا صدقا صراحة صهٍ صهْ
ضحوة طاق طالما طرا طفق طَق ظلّ عاد عامة عجبا عدا عسى عل علق على عليك عليه علًّ عما عن عند
عوض عيانا عَدَسْ غالبا غدا غداة فإذا فإن فرادى فضلا فلان فمن فو فوق في فيم فيما فيه فيها
قاطبة قام قبل قد قطّ قلما كأن كأنما كأنّ كأي كأين كأيّ كأيّن كاد كان كثيرا كذا كذلك كرب كل
كلا كلاهما كلتا كلما كليكما كليهما كلَّا كلّما كم كما كن كى كي كيت كيف كيفما كِخ لئن لاسيما
لبيك لدن لدى لعل لعلَّ لعمر لك لكم لكما لكن لكنما لكنَّ لكي لما لمّا لنا له لها لهم لهما لهن
لو لولا لوما لي ليت مادام ماذا مازال مافتئ متى مثل مذ مرّة مساء مع معاذ مكانكم مكانكما
مكانكنّ مكانَك مما ممن من منذ منه منها مه مهما نا نبَّا نحن نحو نيف نَخْ نَّ هؤلاء ها هاتان
هاته هاتي هاتين هاك هاكَ هاهنا هبّ هذا هذان هذه هذي هذين هكذا هل هلا هلم هلّا هم هما هن هنا
هناك هنالك هو هي هيا هيت هيهات هيّا هَؤلاء هَاتانِ هَاتَيْنِ هَاتِه هَاتِي هَجْ هَذا هَذانِ
هَذَيْنِ هَذِه هَذِي هَيْهات وإذ وإذا وإن وا والذي والذين واهاً وراءَك ولكن ولو ومن وهو وَيْ
وُشْكَانَ يا يفعلان يفعلون يمين அங்கு அங்கே அடுத்த அதனால் அதன் அதற்கு அதிக அதில் அது அதே அதை
அந்த அந்தக் அந்தப் அல்லது அவன் அவரது அவர் அவர்கள் அவள் அவை ஆகிய ஆகியோர் ஆகும் இங்கு இங்கே
இதனால் இதனை இதன் இதற்கு இதில் இது இதை இந்த இந்தக் இந்தத் இந்தப் இன்னும் இப்போது இருக்கும்
இருந்த இருந்தது இருந்து இவர் இவை உன் உள்ள உள்ளது உள்ளன எந்த என எனக் எனக்கு எனப்படும் எனவும்
எனவே எனினும் எனும் என் என்ன என்னும் என்பது என்பதை என்ற என்று என்றும் எல்லாம் ஏன் கொண்ட
கொண்டு கொள்ள சற்று சிறு சில சேர்ந்த தனது தன் தவிர தான் நான் நாம் நீ பற்றி பற்றிய பல பலரும்
பல்வேறு பின் பின்னர் பிற பிறகு பெரும் போது போன்ற போல போல் மட்டுமே மட்டும் மற்ற மற்றும் மிக
மிகவும் மீது மேலும் மேல் யார் வந்த வந்து வரும் வரை வரையில் விட விட்டு வேண்டும் வேறு ἀλλά
ἀλλὰ ἀπ ἀπό ἀπὸ ἀφ ἂν ἃ ἄλλος ἄλλοσ ἄν ἄρα ἅμα ἐάν ἐγώ ἐγὼ ἐκ ἐμόσ ἐμὸς ἐν ἐξ ἐπί ἐπεὶ ἐπὶ
ἐστι ἐφ ἐὰν ἑαυτοῦ ἔτι ἡ ἢ ἣ ἤ ἥ ἧς ἵνα ὁ ὃ ὃν ὃς ὅ ὅδε ὅθεν ὅπερ ὅς ὅσ ὅστις ὅστισ ὅτε ὅτι
ὑμόσ ὑπ ὑπέρ ὑπό ὑπὲρ ὑπὸ ὡς ὡσ ὥς ὥστε ὦ ᾧ — ‘ ’ “ ” … 、 。 〈 〉 《 》 あそこ あっ あの ある あれ い いう いる
う え お および か から が き ここ こちら こと この これ これら さ さらに し しかし する せ せる そこ そして その その他 それ それぞれ それで た ただし
たち ため たり だ だれ つ て で です では でも と という といった として とともに とも と共に どこ どの なお ながら など なに なら なり なる なん に
において における について にて によって により による に対して に対する に関する の ので は ば へ ほか ほど ます また または まで も や よう より ら られる
れ れる を 不仅 不但 与 且 为 为了 为什么 乃 么 之 乎 也 了 于 于是 什么 从 他 他们 他的 以 以及 们 但 但是 何 你 你们 你的 俺 倘 兮 关于 其 其中
其他 几 凭 则 到 即 即使 又 及 及び 及其 另 只是 可以 可是 各 向 吗 吧 呀 呢 咋 咱 咱们 哉 哪 哪个 哪些 哪儿 哪里 啊 啥 啦 嘛 因为 因此 在 她 她们
她的 如 如果 它 它们 它的 对 对于 就 就是 尽管 已经 并 并且 怎 怎么 怎样 您 我 我们 我的 或 或者 所以 把 按 据 既 是 是否 有 某 此 每 焉 然后 然而
由于 的 的话 矣 给 罢了 而 而且 而已 而是 至 若 虽 虽然 被 让 该 谁 貴方 跟 较 过 还是 还有 这 这个 这么 这些 这儿 这样 这种 这里 连 那 那个 那么
那些 那儿 那样 那里 가 가까스로 가령 각 각각 각자 각종 갖고말하자면 같다 같이 개의치않고 거니와 거바 거의 것 것들 게다가 겨우 견지에서 결국 겸사겸사 고려하면
고로 곧 공동으로 과 과연 관계없이 관하여 관한 관해서는 구체적으로 그 그들 그때 그래 그래도 그래서 그러나 그러니 그러니까 그러면 그러므로 그러한즉 그런데 그런즉
그럼 그렇지 그렇지만 그렇지않으면 그리고 그리하여 그만이다 그위에 그저 그중에서 근거로 근거하여 기대여 기점으로 기준으로 기타 까닭으로 까악 까지 까지도 꽈당 끙끙
끼익 나 나머지는 남들 남짓 너 너희 너희들 네 누구 다른 다만 다소 다수 다시말하면 다음 다음에 다음으로 단지 답다 당신 당장 대하면 대하여 대해서 댕그 더구나
더군다나 더라도 더불어 더욱더 더욱이는 동시에 동안 된바에야 된이상 두번째로 둥둥 뒤따라 뒤이어 든간에 들 등 등등 딩동 따라 따라서 따위 딱 때 때문에 또 또한
뚝뚝 령 로 로부터 로써 륙 를 마음대로 마저 마저도 마치 막론하고 만약 만약에 만일 만큼 말하자면 매 매번 메쓰겁다 몇 모 모두 무렵 무릎쓰고 무슨 무엇 무엇때문에
물론 및 바꾸어말하면 바꾸어말하자면 바로 바와같이 반대로 반드시 버금 보는데서 보다더 보드득 본대로 봐 봐라 부터 불구하고 불문하고 붕붕 비걱거리다 비교적 비로소
비록 비하면 뿐만아니라 뿐이다 삐걱 생각한대로 설령 설마 설사 소생 소인 솨 쉿 습니까 습니다 시작하여 시초에 실로 심지어 아 아니나다를가 아니라면 아니면 아니었다면
아래윗 아무거나 아무도 아야 아울러 아이 아이고 아이구 아이야 아이쿠 아하 알았어 앗 앞에서 앞의것 야 약간 양자 어 어기여차 어느 어느것 어느곳 어느때 어느쪽
어느해 어디 어때 어떠한 어떤 어떤것 어떤것들 어떻게 어떻해 어이 어째서 어쨋든 어찌 어찌됏든 어찌됏어 어찌하든지 어찌하여 언제 언젠가 얼마 얼마간 얼마나 얼마든지
얼마만큼 얼마큼 엉엉 에 에게 에서 여 여기 여러분 여보시오 여부 여전히 여차 연이서 영차 옆사람 예 예컨대 예하면 오로지 오자마자 오직 오호 오히려 와 와르르 와아
왜 왜냐하면 외에도 요만큼 요만한걸 요컨대 우르르 우리 우리들 우선 운운 위하여 위해서 윙윙 으로 으로서 으로써 을 응 응당 의 의거하여 의지하여 의해 의해되다
의해서 이 이것 이곳 이때 이라면 이래 이러이러하다 이러한 이런 이럴정도로 이렇게되면 이렇게말하자면 이렇구나 이르기까지 이리하여 이만큼 이번 이봐 이상 이어서 이었다
이와같다면 이외에도 이용하여 이유만으로 이젠 이지만 이쪽 이천구 이천육 이천칠 이천팔 인젠 일것이다 일단 일때 일반적으로 일지라도 입각하여 입장에서 잇따라 있다 자
자기 자기집 자마자 자신 잠깐 잠시 저 저것 저것만큼 저기 저쪽 저희 전부 전자 전후 제 제각기 제외하고 조금 조차 조차도 졸졸 좀 좋아 좍좍 주룩주룩 줄은모른다
중에서 중의하나 즈음하여 즉 즉시 지든지 지만 지말고 진짜로 쪽으로 차라리 참 참나 첫번째로 쳇 총적으로 콸콸 쾅쾅 쿵 탕탕 통하여 툭 퉤 틈타 팍 퍽 펄렁 하
하게될것이다 하게하다 하겠는가 하고있었다 하곤하였다 하구나 하기는한데 하기보다는 하기에 하느니 하는것도 하는바 하더라도 하도다 하도록시키다 하도록하다 하든지
하려고하다 하마터면 하면된다 하면서 하물며 하여금 하여야 하자마자 하지마 하지마라 하지만 하하 한다면 한데 한적이있다 한켠으로는 한항목 할때 할만하다 할망정 할뿐
할수있다 할수있어 할줄알다 할지라도 할지언정 함께 해도된다 해도좋다 해봐요 해야한다 해요 했어요 향하여 향해서 허 허걱 허허 헉 헉헉 헐떡헐떡 혹시 혹은 혼자 훨씬
휘익 휴 흐흐 흥 힘입어 ︿ ！ ＃ ＄ ％ ＆ （ ） ＊ ＋ ， ： ； ＜ ＞ ？ ＠ ［ ］ ｛ ｜ ｝ ～ ￥
"#;

/// Stop words of `icu` / `icu/split` in pylance 11 and 12 only (1 267 words).
pub(super) const ICU_ONLY_11_12: &str = r#"
... 0 1 2 3 4 5 6 7 8 9 ai ain aren aren't az bin cam cat cikk cikkek cikkeket cita cite
citi couldn couldn't d daha dat dată dau den didn didn't die din dintr- doesn doesn't dog
doi doilea don don't door două du dă egyetlen egész ei eitt eivät ej első emme en end et ett
ette eu face fara fără geen hadn hadn't ham hasn hasn't hat haven haven't hay hem hep hiç
hoe icke igen ikke ikkje ill ingen ingi inkje inn inte isn isn't jobban jó jól kein keine
keinem keinen keiner keines keressünk kom ll m ma machen man men mightn mightn't min mint
mod mustn mustn't mâine mîine n nada nagy nagyobb ne needn needn't nem ni nicht nichts nici
niet niets nimeni nimic nincs no non nor not nou nouă nu nun não nélkül o ohne once pas
patra patru poikki prima primul printr- s sa-mi sa-ti sale sans sea seas sei sem semmi shan
shan't shouldn shouldn't sin sine sit son soy spate sí t tale teljes tot trei treia treilea
tém uno unu utan uten utolsó van var ve vi vort want war wasn wasn't weren weren't won won't
wouldn wouldn't y zi zice zonder çok étée étées új újabb γα^ δ' δαίσ δαὶς δεν δι' δ’ μή μήτε
μη μην μὴ οὐ οὐδ οὐδέ οὐδείσ οὐδεὶς οὐδὲ οὐδὲν οὐκ οὐχ οὐχὶ οὔτε говорил два жизнь не нельзя
нет ни никогда ничего один сказал сказала сказать три человек ء آ آب آذار أ أبريل أحد أربع
أربعاء أربعة أربعمئة أربعمائة أسكن أطعم أعطى أعلم أغسطس أفريل أكتوبر ألف ألفى أنبأ أوت أول
أيار أيلول ؤ إحدى ئ ا اتخذ اثنا اثنان اثني اثنين اربعون اربعين ب باء بس ة ت تاء تاسع ترك تسع
تسعة تسعمئة تسعمائة تسعون تسعين تشرين تعلَّم تموز ث ثاء ثالث ثامن ثان ثاني ثلاث ثلاثاء ثلاثة
ثلاثمئة ثلاثمائة ثلاثون ثلاثين ثمان ثمانمئة ثمانون ثماني ثمانية ثمانين ج جانفي جمعة جنيه
جوان جويلية جيم ح حاء حادي حزيران خ خاء خامس خمس خمسة خمسمئة خمسمائة خمسون خمسين خميس د دال
درهم درى دولار ديسمبر دينار ذ ذال ذهب ر رأى راء رابع رزق ريال ز زاي زعم س سابع سادس سبت
سبتمبر سبع سبعة سبعمئة سبعمائة سبعون سبعين ست ستة ستمئة ستمائة ستون ستين سقى سنتيم سين ش
شباط شيكل شين ص صاد صبر ض ضاد ط طاء ظ ظاء ظنَّ ع عاشر عدَّ عشر عشرة عشرون عشرين علم عين غ
غادر غير غين ف فاء فبراير فلا فلس فيفري ق قاف قرش ك كاف كانون كسا ل لا لات لام لست لستم
لستما لستن لسن لسنا لكيلا لم لن ليرة ليس ليسا ليست ليستا ليسوا م مئة مئتان ما مائة مارس ماي
مايو مليم ميم ن نعم نفس نوفمبر نون نيسان ه هاء هللة همزة و واحد واو وجد ورد ولا وما وهب ى ي
ياء ين يناير يوان يورو يوليو يونيو ّأيّان அன்று இடத்தில் இடம் இரு ஒரு ஒரே ஓர் பேர் முதல்
முறை ἀλλ' ἀλλ’ —— あのかた あの人 あり あります います うち おり おります かつて ず その後 だっ でき できる とき ところ な ない なかっ なく なっ
のみ ほとんど もの ものの られ ん 一 一下 一些 一切 一则 一天 一定 一方面 一旦 一时 一来 一样 一次 一片 一直 一致 一般 一起 一边 一面 万一 上下 上升 上去
上来 上述 上面 下列 下去 下来 下面 不一 不久 不会 不光 不单 不变 不只 不可 不同 不够 不如 不得 不怕 不惟 不成 不拘 不敢 不断 不是 不比 不然 不特 不独 不管
不能 不要 不论 不足 不过 不问 与其 与否 与此同时 专门 两者 严格 严重 个 个人 个别 中小 中间 丰富 临 为主 为什麽 为何 为着 主张 主要 举行 乃至 之一 之前
之后 之後 之所以 之类 乌乎 乘 也好 也是 也罢 了解 争取 于是乎 云云 互相 产生 人们 人家 什么样 什麽 今后 今天 今年 今後 仍然 从事 从而 他人 代替 以上 以下
以为 以便 以免 以前 以后 以外 以後 以来 以至 以至于 以致 任 任何 任凭 任务 企图 伟大 似乎 似的 何况 何处 何时 作为 使得 使用 例如 依 依照 依靠 促进 保持
俺们 倘使 倘或 倘然 倘若 假使 假如 假若 做到 像 允许 充分 先后 先後 先生 全部 全面 共同 其一 其二 其余 其它 其实 其次 具体 具体地说 具体说来 具有 再者 再说
冒 冲 决定 况且 准备 几乎 几时 凭借 出去 出来 出现 分别 别 别的 别说 前后 前者 前进 前面 加之 加以 加入 加强 十分 即令 即便 即或 即若 却不 原来 及时 及至
双方 反之 反应 反映 反过来 反过来说 取得 受到 变成 另一方面 另外 只有 只要 只限 叫 叫做 召开 叮咚 可 可能 可见 各个 各人 各位 各地 各种 各级 各自 合理 同
同一 同时 同样 后来 后面 向着 吓 否则 吧哒 吱 呃 呕 呗 呜 呜呼 周围 呵 呸 呼哧 和 咚 咦 咳 哇 哈 哈哈 哎 哎呀 哎哟 哗 哟 哦 哩 哪天 哪年 哪怕 哪样
哪边 哼 哼唷 唉 啐 啪达 喂 喏 喔唷 嗡嗡 嗬 嗯 嗳 嘎 嘎登 嘘 嘻 嘿 因 因而 固然 在下 地 坚决 坚持 基本 处理 复杂 多 多少 多数 多次 大力 大多数 大大
大家 大批 大约 大量 失去 好的 好象 如上所述 如下 如何 如其 如此 如若 存在 宁 宁可 宁愿 宁肯 它们的 安全 完全 完成 实现 实际 宣布 容易 密切 对应 将 少数
尔后 尚且 尤其 就是说 尽 属于 岂但 左右 巨大 巩固 己 帮助 常常 并不 并不是 并没有 广大 广泛 应当 应用 应该 开外 开始 开展 引起 强烈 强调 归 当 当前 当时
当然 当着 形成 彻底 彼 彼女 彼此 往 往往 待 後来 後面 得 得出 得到 心里 必然 必要 必须 怎么办 怎么样 怎麽 总之 总是 总的来看 总的来说 总的说来 总结 总而言之
恰恰相反 意思 愿意 慢说 成为 我々 或是 战斗 所 所有 所谓 打 扩大 抑或 拿 按照 换句话说 换言之 掌握 接着 接著 故 故此 整个 方便 方面 旁人 无宁 无法 无论
既是 既然 时候 明显 明确 是不是 是的 显然 显著 普通 普遍 更加 曾经 替 最后 最大 最好 最後 最近 最高 有些 有关 有利 有力 有所 有效 有时 有点 有的 有着 有著
望 朝 朝着 本 本着 来 来着 极了 构成 果然 果真 某个 某些 根据 根本 欢迎 正在 正如 正常 此外 此时 此间 毋宁 每个 每天 每年 每当 比 比如 比方 比较 毫不
没有 沿 沿着 注意 深入 清楚 满足 漫说 然则 然後 照 照着 特に 特别是 特殊 特点 现代 现在 甚么 甚而 甚至 用 由 由此可见 目前 直到 直接 相似 相信 相反 相同
相对 相对而言 相应 相当 相等 省得 看出 看到 看来 看看 看见 真是 真正 着 着呢 知道 确定 离 私 私達 积极 移动 突出 突然 立即 第 等 等等 管 紧接着 纵 纵令
纵使 纵然 练习 组成 经 经常 经过 结合 结果 绝对 继续 继而 维持 综上所述 考虑 者 而况 而外 而言 联系 能 能否 能够 腾 自 自个儿 自从 自各儿 自家 自己 自身
至于 良好 若是 若非 范围 莫若 获得 虽则 虽说 行为 行动 表明 表示 要 要不 要不是 要不然 要么 要是 要求 规定 觉得 认为 认真 认识 许多 论 设使 设若 说明 诸位
谁知 貴方方 赶 起 起来 起见 趁 趁着 越是 转动 转变 转贴 较之 边 达到 迅速 过去 过来 运用 这么些 这么样 这么点儿 这会儿 这就是说 这时 这点 这边 这麽 进入
进步 进而 进行 连同 适应 适当 适用 逐步 逐渐 通常 通过 造成 遇到 遭到 避免 那么些 那么样 那会儿 那时 那边 那麽 部分 鄙人 采取 里面 重大 重新 重要 鉴于 问题
防止 阿 附近 限制 除 除了 除此之外 除非 随 随着 随著 集中 需要 非但 非常 非徒 靠 顺 顺着 首先 高兴 게우다 구 구토하다 넷 년 놀라다 다섯 도달하다 도착하다
둘 비슷하다 삐걱거리다 사 삼 셋 시각 시간 시키다 아니 아홉 여덟 여섯 연관되다 영 오 오르다 월 육 일 일곱 칠 타다 타인 토하다 팔 하나 한마디 향하다 ０ １
２ ３ ４ ５ ６ ７ ８ ９
"#;

/// Stop words of `icu` / `icu/split` in pylance 14 only (5 words).
pub(super) const ICU_ONLY_14: &str = r#"
её неё 你們 嗎 我們
"#;
