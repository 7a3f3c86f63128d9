// Package config reads RocketMQ-style configuration: Java .properties files
// with RocketMQ's key names, bound onto Go structs whose fields carry
// `prop:"<rocketmqKey>"` tags (and `live:"true"` where a key may change at
// run time). Durations stay plain integers of milliseconds, as in RocketMQ.
//
// It owns the parsing, the classification of keys, the live-update
// allow-list and writing changed keys back into a file (UpdateFile). It must never accept a key silently: every key is applied,
// reported as a RocketMQ key Spool has not built (the caller warns), or
// refused with an error naming it. It must never change a path, directory
// or class name at run time, and never partially apply a configuration that
// has an error.
//
// # File format (java.util.Properties.load)
//
//	# comment            ! also a comment       (only where a line starts)
//	key=value            key: value             key value
//	key = a long \
//	      value          -> "a long value"      (continuation: odd number of
//	                                             trailing '\'; leading blanks of
//	                                             the next line dropped)
//	path=C:\\data        -> "C:\data"           escapes \t \n \r \f \uXXXX, \<c> -> c
//	  spaced  =  v       -> key "spaced", value "v"
//
// Leading blanks (space, tab, form feed) are skipped; the key ends at the
// first unescaped '=', ':' or blank; blanks and one '=' or ':' after it are
// skipped; trailing unescaped blanks of the value are trimmed (RocketMQ trims
// string values too). Lines end at \n, \r or \r\n; a repeated key keeps its
// last value. The file is read as UTF-8 (Java reads ISO-8859-1; both agree
// on ASCII, which every RocketMQ key and nearly every value is).
//
// # Key classes (Bind)
//
//	declared by a target            -> applied             Report.Applied
//	RocketMQ key, not declared      -> ignored, warn       Report.Unbuilt
//	value weakening a promise       -> error ErrNotBuilt   e.g. enableDLegerCommitLog=true,
//	                                                       aclEnable=true
//	unknown to RocketMQ and Spool   -> error ErrUnknownKey "... (did you mean listenPort?)"
//
// The environment override for the advertised address is SPOOL_BROKER_IP1
// (see ApplyEnv).
package config
