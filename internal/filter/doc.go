// Package filter owns the broker-side message filters a consumer
// subscription compiles to: the tag filter (expression type TAG) and the
// SQL92 property filter (expression type SQL92). A Filter satisfies
// store.MessageFilter, so the store applies it while it reads a queue.
//
// The package must never do I/O, keep state between matches, or modify the
// records it is shown; a compiled Filter is immutable and safe for
// concurrent use.
//
// # Tag filter
//
// "*" or "" matches every message. Otherwise the subscription string is
// split on "||", each part trimmed, and the set of Java String.hashCode
// values of the tags is kept; MatchTagsCode compares the consume-queue tag
// code cut to 32 bits with that set (as RocketMQ's broker does; the client
// then compares tag strings). MatchRecord is always true.
//
// # SQL92 filter
//
// RocketMQ's selector grammar, keywords case-insensitive:
//
//	expr       = and { OR and }
//	and        = equality { AND equality }
//	equality   = comparison { ( "=" | "<>" ) comparison | IS [NOT] NULL }
//	comparison = unary { ( ">" | ">=" | "<" | "<=" ) unary
//	                   | [NOT] BETWEEN unary AND unary
//	                   | [NOT] IN "(" string { "," string } ")"
//	                   | [NOT] ( CONTAINS | STARTSWITH | ENDSWITH ) string }
//	unary      = ( "+" | "-" | NOT ) unary | primary
//	primary    = literal | property | "(" expr ")"
//	literal    = string | integer [ "L" ] | decimal | TRUE | FALSE | NULL
//	property   = [A-Za-z_$] [A-Za-z0-9_$]*          (case-sensitive name)
//	string     = "'" { any character, "''" for a quote } "'"
//	comments   = "--" to end of line | "/*" ... "*/"
//
// NOT binds tighter than comparisons, as in RocketMQ: write NOT (a > 5),
// not NOT a > 5 (which is refused).
//
// Evaluation follows RocketMQ (itself ActiveMQ's selector code) over
// properties that are all strings, with SQL three-valued logic: a missing
// property makes a comparison UNKNOWN, AND and OR combine UNKNOWN as SQL
// does, NOT UNKNOWN is UNKNOWN, and only TRUE matches. So neither a > 5 nor
// NOT (a > 5) matches a message without a. The RocketMQ rules kept on
// purpose:
//
//   - An integer literal within int32 range is a Java Integer, otherwise a
//     Long; a decimal literal is a Double. Comparing a property with a
//     number parses the property as that type (Integer.valueOf,
//     Long.valueOf, Double.valueOf). A value that does not parse is an
//     evaluation error: the whole expression does not match, unless an AND
//     or OR already decided before reaching it (left to right).
//   - Two properties compared with <, <=, >, >= are both parsed as doubles
//     (an error if either does not parse); with = they compare as strings.
//   - a = b is UNKNOWN when a is missing, FALSE when only b is missing and
//     TRUE when both are missing. IS NULL and IS NOT NULL are never UNKNOWN.
//   - A bare property used as a condition is FALSE (its value is a string,
//     not a boolean) or UNKNOWN when missing.
//   - IN takes string literals only and compares strings.
//   - CONTAINS, STARTSWITH and ENDSWITH with an empty string are FALSE.
//   - The low and high literals of BETWEEN must be in order.
//
// Deliberate differences from RocketMQ: CONTAINS, STARTSWITH and ENDSWITH
// (and their NOT forms) are UNKNOWN on a missing property where RocketMQ
// answers FALSE (so NOT (a CONTAINS 'x') does not match a message without
// a), and the decimal literal 0.0 is accepted where RocketMQ refuses it.
package filter
