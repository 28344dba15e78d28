# The filter suite: one SQL filter per line, run by pylance (scripts/gen_filter_suite.py)
# and by Lancer (crates/lancer/tests/filters.rs) over the same dataset; the rows (ids, in
# order) or the refusal must agree. `filter  ## equivalent` marks SQL the reference does
# not support but Lancer does (DataFusion's): there the expected rows are what pylance
# returns for the equivalent filter. `filter  ## REFUSE` marks text pylance accepts but
# Lancer refuses on purpose (pylance ignores trailing text after a complete expression). Columns: id int64, i32 int32 (nulls), u8 uint8,
# f32 float32 (NaN, nulls), f64 float64 (NaN, ±inf), s utf8 (unicode, empty, nulls),
# ls large_utf8, b bool (nulls), d date32 (nulls), ts timestamp[us], tags list<utf8>,
# nums list<int64> (nulls), meta struct<lang utf8, score float64> (struct nulls),
# vec fixed_size_list<float32, 4>, bin binary, `odd name` int32.
# comparisons
id = 5
id == 5
id != 5
id <> 5
id < 10
id <= 10
id > 1990
id >= 1990
5 = id
10 > id
i32 = 7
i32 > 100
i32 < -100
i32 != 0
u8 = 255
u8 > 250
u8 = 0
f32 > 0.5
f32 < -0.5
f32 = 0
f64 > 1.5
f64 < -1.5
f64 >= 0
f64 = 'NaN'
s = 'apple'
s != 'apple'
s > 'm'
s = ''
s = "apple"
ls = 'kiwi'
b = true
b = false
b
NOT b
b IS TRUE
b IS NOT TRUE
b IS FALSE
d > date '2021-06-01'
d = date '2020-01-01'
d < date '2020-03-01'
ts > timestamp '2021-01-01 00:00:00'
ts < timestamp '2020-01-02 12:00:00'
bin = X'00'
`odd name` > 1000
# boolean logic and null handling
id < 20 AND i32 > 0
id < 20 OR id > 1980
NOT (id < 1990)
(id < 10 OR id > 1990) AND NOT (id = 5)
i32 > 0 AND f32 > 0
i32 IS NULL
i32 IS NOT NULL
f32 IS NULL
s IS NULL
s IS NOT NULL AND s != 'apple'
d IS NULL
meta IS NULL
meta.lang IS NULL
nums IS NULL
b IS NULL
NOT (i32 > 0)
i32 > 0 OR i32 <= 0
# IN / BETWEEN
id IN (1, 2, 3, 1000)
id NOT IN (1, 2, 3)
s IN ('apple', 'kiwi', 'ünïcödé')
s NOT IN ('apple', 'kiwi')
i32 IN (1, 2, 3)
i32 NOT IN (1, 2, 3)
id BETWEEN 100 AND 110
id NOT BETWEEN 10 AND 1990
f64 BETWEEN -0.1 AND 0.1
d BETWEEN date '2020-01-01' AND date '2020-02-01'
u8 BETWEEN 10 AND 12
# LIKE
s LIKE 'app%'
s LIKE '%an%'
s LIKE '_iwi'
s NOT LIKE 'a%'
s ILIKE 'APP%'
s LIKE 'ü%'
ls LIKE '%i%'
# arithmetic
id % 100 = 0
id * 2 > 3900
id + 1 = 11
id - 1 = 9
id / 100 = 3
i32 + id > 2000
f64 * 2 > 3
-id < -1995
(id % 7) = (id % 11)
# casts
CAST(id AS string) = '42'
CAST(f32 AS int) = 0
CAST(s AS varchar) = 'apple'  ## s = 'apple'
CAST(u8 AS bigint) > 253
TRY_CAST(s AS int) IS NULL
# string functions
lower(s) = 'apple'
upper(s) = 'KIWI'
length(s) > 6
char_length(s) = 5
starts_with(s, 'ba')
ends_with(s, 'na')
strpos(s, 'an') > 0
substr(s, 1, 2) = 'ap'  ## s LIKE 'ap%'
concat(s, '!') = 'kiwi!'
trim(s) = s  ## s IS NOT NULL AND NOT starts_with(s, ' ') AND NOT ends_with(s, ' ')
s || 'x' = 'applex'
replace(s, 'a', 'o') = 'bonono'
contains(s, 'iw')
# regex functions
regexp_like(s, '^a.*e$')
regexp_match(s, '^k')
regexp_like(s, '[0-9]')
s ~ '^b'  ## regexp_like(s, '^b')
# date / time functions
date_part('year', d) = 2021
extract(month FROM d) = 2  ## date_part('month', d) = 2
date_trunc('month', ts) = timestamp '2020-01-01 00:00:00'
d + interval '1 day' > date '2021-12-31'  ## d > date '2021-12-30'
# nested fields and lists
meta.lang = 'en'
meta.lang != 'en'
meta.score > 0.9
meta.lang IN ('fr', 'de')
meta['lang'] = 'de'
array_has(tags, 'red')
array_has_any(tags, ['red', 'blue'])
array_has_all(tags, ['red', 'blue'])
array_contains(tags, 'green')
array_length(tags) = 2
cardinality(nums) > 2
nums[1] = 3
array_has(nums, 7)
array_position(tags, 'blue') = 1
# NaN, infinity and math
isnan(f64)
f64 = 'Infinity'::double
abs(f64) > 2.5
f32 > 0 AND NOT isnan(f32)
round(f64) = 1
sqrt(id) = 10
floor(f64) = 0  ## f64 >= 0 AND f64 < 1
ceil(f64) = 0  ## f64 > -1 AND f64 <= 0
# CASE / COALESCE / NULLIF
COALESCE(i32, 0) = 0
NULLIF(u8, 0) IS NULL
CASE WHEN id < 10 THEN true ELSE false END  ## id < 10
CASE WHEN s = 'apple' THEN 1 WHEN s = 'kiwi' THEN 2 ELSE 0 END = 2  ## s = 'kiwi'
# constant filters
true
false
1 = 1
NULL
id > NULL
# refused by the reference: both must refuse
id = 'abc'
id > 1.5
i32 = 3000000000
u8 = 256
u8 = -1
s = 5
nosuch > 1
id >
id = 1 junk  ## REFUSE
unknown_function(id)
meta.nosuch = 1
id + 
