//! The part of Substrait's protobuf messages a filter uses (`ExtendedExpression` and the
//! `Expression` tree under it), declared by hand for prost: the field numbers are the
//! Substrait specification's (`proto/substrait/extended_expression.proto`,
//! `algebra.proto`, `type.proto`, `extensions/extensions.proto`), including the older
//! literal fields PyArrow still writes (`timestamp` = 14, `time` = 17, `timestamp_tz` =
//! 27). A `oneof` member this module does not read is declared as [`Opaque`], so what
//! a filter holds is named rather than dropped; fields not declared are skipped by
//! prost, as protobuf readers do. prost bounds the nesting it decodes (100 levels).
//!
//! Declared here rather than taken from the `substrait` crate: that crate generates its
//! types with `protoc` at build time, which this workspace (prost + protox) does not
//! need anywhere else.

/// A message whose contents are not read (a kind of expression, literal or type that a
/// Lance filter has no use for); decoding it only checks that its bytes are whole.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Opaque {}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExtendedExpression {
    #[prost(message, repeated, tag = "2")]
    pub extensions: Vec<ExtensionDeclaration>,
    #[prost(message, repeated, tag = "3")]
    pub referred_expr: Vec<ExpressionReference>,
    #[prost(message, optional, tag = "4")]
    pub base_schema: Option<NamedStruct>,
}

/// `SimpleExtensionDeclaration`: its `extension_type` and `extension_function` members.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExtensionDeclaration {
    #[prost(message, optional, tag = "1")]
    pub extension_type: Option<ExtensionType>,
    #[prost(message, optional, tag = "3")]
    pub extension_function: Option<ExtensionFunction>,
}

/// A user-defined type: PyArrow declares the Arrow types Substrait lacks this way
/// (`u8` … `u64`, `fp16`, `large_string`, `large_binary`, …).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExtensionType {
    #[prost(uint32, tag = "2")]
    pub type_anchor: u32,
    #[prost(string, tag = "3")]
    pub name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExtensionFunction {
    #[prost(uint32, tag = "2")]
    pub function_anchor: u32,
    /// The function's name, possibly with its signature after a `:` (`equal:any_any`).
    #[prost(string, tag = "3")]
    pub name: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ExpressionReference {
    #[prost(message, optional, tag = "1")]
    pub expression: Option<Expression>,
    #[prost(message, optional, tag = "2")]
    pub measure: Option<Opaque>,
    #[prost(string, repeated, tag = "3")]
    pub output_names: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct NamedStruct {
    /// Every field's name, depth first.
    #[prost(string, repeated, tag = "1")]
    pub names: Vec<String>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Expression {
    #[prost(
        oneof = "Rex",
        tags = "1, 2, 3, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17"
    )]
    pub rex: Option<Rex>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Rex {
    #[prost(message, tag = "1")]
    Literal(Literal),
    #[prost(message, tag = "2")]
    Selection(Box<FieldReference>),
    #[prost(message, tag = "3")]
    ScalarFunction(ScalarFunction),
    #[prost(message, tag = "5")]
    WindowFunction(Opaque),
    #[prost(message, tag = "6")]
    IfThen(Box<IfThen>),
    #[prost(message, tag = "7")]
    SwitchExpression(Opaque),
    #[prost(message, tag = "8")]
    SingularOrList(Box<SingularOrList>),
    #[prost(message, tag = "9")]
    MultiOrList(Opaque),
    #[prost(message, tag = "11")]
    Cast(Box<Cast>),
    #[prost(message, tag = "12")]
    Subquery(Opaque),
    #[prost(message, tag = "13")]
    Nested(Opaque),
    #[prost(message, tag = "14")]
    DynamicParameter(Opaque),
    #[prost(message, tag = "15")]
    Lambda(Opaque),
    #[prost(message, tag = "16")]
    LambdaInvocation(Opaque),
    #[prost(message, tag = "17")]
    ExecutionContextVariable(Opaque),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Literal {
    #[prost(
        oneof = "LiteralKind",
        tags = "1, 2, 3, 5, 7, 10, 11, 12, 13, 14, 16, 17, 19, 20, 21, 22, 23, 24, 25, 26, 27, \
                28, 29, 30, 31, 32, 33, 34, 35, 36, 37"
    )]
    pub kind: Option<LiteralKind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum LiteralKind {
    #[prost(bool, tag = "1")]
    Boolean(bool),
    #[prost(int32, tag = "2")]
    I8(i32),
    #[prost(int32, tag = "3")]
    I16(i32),
    #[prost(int32, tag = "5")]
    I32(i32),
    #[prost(int64, tag = "7")]
    I64(i64),
    #[prost(float, tag = "10")]
    Fp32(f32),
    #[prost(double, tag = "11")]
    Fp64(f64),
    #[prost(string, tag = "12")]
    String(String),
    #[prost(bytes = "vec", tag = "13")]
    Binary(Vec<u8>),
    /// Microseconds since the epoch, no time zone (the older field PyArrow writes).
    #[prost(int64, tag = "14")]
    Timestamp(i64),
    /// Days since the epoch.
    #[prost(int32, tag = "16")]
    Date(i32),
    /// Microseconds since midnight (older field).
    #[prost(int64, tag = "17")]
    Time(i64),
    #[prost(message, tag = "19")]
    IntervalYearToMonth(Opaque),
    #[prost(message, tag = "20")]
    IntervalDayToSecond(Opaque),
    #[prost(string, tag = "21")]
    FixedChar(String),
    #[prost(message, tag = "22")]
    VarChar(VarChar),
    #[prost(bytes = "vec", tag = "23")]
    FixedBinary(Vec<u8>),
    #[prost(message, tag = "24")]
    Decimal(Decimal),
    #[prost(message, tag = "25")]
    Struct(Opaque),
    #[prost(message, tag = "26")]
    Map(Opaque),
    /// Microseconds since the epoch in UTC (older field).
    #[prost(int64, tag = "27")]
    TimestampTz(i64),
    #[prost(bytes = "vec", tag = "28")]
    Uuid(Vec<u8>),
    /// A typed null.
    #[prost(message, tag = "29")]
    Null(Type),
    #[prost(message, tag = "30")]
    List(LiteralList),
    #[prost(message, tag = "31")]
    EmptyList(Opaque),
    #[prost(message, tag = "32")]
    EmptyMap(Opaque),
    #[prost(message, tag = "33")]
    UserDefined(UserDefinedLiteral),
    #[prost(message, tag = "34")]
    PrecisionTimestamp(PrecisionValue),
    #[prost(message, tag = "35")]
    PrecisionTimestampTz(PrecisionValue),
    #[prost(message, tag = "36")]
    IntervalCompound(Opaque),
    #[prost(message, tag = "37")]
    PrecisionTime(PrecisionValue),
}

/// A value of a user-defined type: PyArrow writes it as a `google.protobuf.Any` holding
/// a wrapper message (`StringValue`, `UInt64Value`, `BytesValue`, …).
#[derive(Clone, PartialEq, prost::Message)]
pub struct UserDefinedLiteral {
    #[prost(uint32, tag = "1")]
    pub type_reference: u32,
    #[prost(message, optional, tag = "2")]
    pub value: Option<prost_types::Any>,
    #[prost(message, optional, tag = "4")]
    pub r#struct: Option<Opaque>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct VarChar {
    #[prost(string, tag = "1")]
    pub value: String,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Decimal {
    /// The unscaled value, 16 bytes of little-endian two's complement.
    #[prost(bytes = "vec", tag = "1")]
    pub value: Vec<u8>,
    #[prost(int32, tag = "2")]
    pub precision: i32,
    #[prost(int32, tag = "3")]
    pub scale: i32,
}

/// `PrecisionTimestamp` / `PrecisionTime` literals: `value` in units of 10^-precision s.
#[derive(Clone, PartialEq, prost::Message)]
pub struct PrecisionValue {
    #[prost(int32, tag = "1")]
    pub precision: i32,
    #[prost(int64, tag = "2")]
    pub value: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct LiteralList {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<Literal>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FieldReference {
    #[prost(message, optional, tag = "1")]
    pub direct_reference: Option<ReferenceSegment>,
    #[prost(message, optional, tag = "2")]
    pub masked_reference: Option<Opaque>,
    /// A reference into an expression's value rather than the row (not read).
    #[prost(message, optional, tag = "3")]
    pub expression: Option<Opaque>,
    #[prost(message, optional, tag = "4")]
    pub root_reference: Option<Opaque>,
    #[prost(message, optional, tag = "5")]
    pub outer_reference: Option<Opaque>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ReferenceSegment {
    #[prost(message, optional, tag = "1")]
    pub map_key: Option<Opaque>,
    #[prost(message, optional, boxed, tag = "2")]
    pub struct_field: Option<Box<StructField>>,
    #[prost(message, optional, tag = "3")]
    pub list_element: Option<Opaque>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct StructField {
    #[prost(int32, tag = "1")]
    pub field: i32,
    #[prost(message, optional, tag = "2")]
    pub child: Option<ReferenceSegment>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct ScalarFunction {
    #[prost(uint32, tag = "1")]
    pub function_reference: u32,
    #[prost(message, repeated, tag = "4")]
    pub arguments: Vec<FunctionArgument>,
    /// The older, deprecated argument list (plain expressions).
    #[prost(message, repeated, tag = "2")]
    pub args: Vec<Expression>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct FunctionArgument {
    #[prost(string, optional, tag = "1")]
    pub r#enum: Option<String>,
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<Opaque>,
    #[prost(message, optional, tag = "3")]
    pub value: Option<Expression>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct IfThen {
    #[prost(message, repeated, tag = "1")]
    pub ifs: Vec<IfClause>,
    #[prost(message, optional, tag = "2")]
    pub r#else: Option<Expression>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct IfClause {
    #[prost(message, optional, tag = "1")]
    pub r#if: Option<Expression>,
    #[prost(message, optional, tag = "2")]
    pub then: Option<Expression>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct SingularOrList {
    #[prost(message, optional, tag = "1")]
    pub value: Option<Expression>,
    #[prost(message, repeated, tag = "2")]
    pub options: Vec<Expression>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Cast {
    #[prost(message, optional, tag = "1")]
    pub r#type: Option<Type>,
    #[prost(message, optional, tag = "2")]
    pub input: Option<Expression>,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct Type {
    #[prost(
        oneof = "TypeKind",
        tags = "1, 2, 3, 5, 7, 10, 11, 12, 13, 14, 16, 17, 19, 20, 21, 22, 23, 24, 25, 27, 28, \
                29, 30, 32, 33, 34, 35, 36, 37, 38, 39"
    )]
    pub kind: Option<TypeKind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum TypeKind {
    #[prost(message, tag = "1")]
    Bool(Opaque),
    #[prost(message, tag = "2")]
    I8(Opaque),
    #[prost(message, tag = "3")]
    I16(Opaque),
    #[prost(message, tag = "5")]
    I32(Opaque),
    #[prost(message, tag = "7")]
    I64(Opaque),
    #[prost(message, tag = "10")]
    Fp32(Opaque),
    #[prost(message, tag = "11")]
    Fp64(Opaque),
    #[prost(message, tag = "12")]
    String(Opaque),
    #[prost(message, tag = "13")]
    Binary(Opaque),
    #[prost(message, tag = "14")]
    Timestamp(Opaque),
    #[prost(message, tag = "16")]
    Date(Opaque),
    #[prost(message, tag = "17")]
    Time(Opaque),
    #[prost(message, tag = "19")]
    IntervalYear(Opaque),
    #[prost(message, tag = "20")]
    IntervalDay(Opaque),
    #[prost(message, tag = "21")]
    FixedChar(Opaque),
    #[prost(message, tag = "22")]
    VarChar(Opaque),
    #[prost(message, tag = "23")]
    FixedBinary(Opaque),
    #[prost(message, tag = "24")]
    Decimal(DecimalType),
    #[prost(message, tag = "25")]
    Struct(Opaque),
    #[prost(message, tag = "27")]
    List(Opaque),
    #[prost(message, tag = "28")]
    Map(Opaque),
    #[prost(message, tag = "29")]
    TimestampTz(Opaque),
    #[prost(message, tag = "30")]
    UserDefined(UserDefinedType),
    #[prost(message, tag = "32")]
    Uuid(Opaque),
    #[prost(message, tag = "33")]
    PrecisionTimestamp(PrecisionType),
    #[prost(message, tag = "34")]
    PrecisionTimestampTz(PrecisionType),
    #[prost(message, tag = "35")]
    IntervalCompound(Opaque),
    #[prost(message, tag = "36")]
    PrecisionTime(PrecisionType),
    #[prost(message, tag = "37")]
    Alias(Opaque),
    #[prost(message, tag = "38")]
    Func(Opaque),
    #[prost(message, tag = "39")]
    Unbound(Opaque),
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct UserDefinedType {
    #[prost(uint32, tag = "1")]
    pub type_reference: u32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct DecimalType {
    #[prost(int32, tag = "1")]
    pub scale: i32,
    #[prost(int32, tag = "2")]
    pub precision: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
pub struct PrecisionType {
    #[prost(int32, tag = "1")]
    pub precision: i32,
}
