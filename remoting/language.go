package remoting

// languageNames maps RocketMQ LanguageCode ordinals to their names.
var languageNames = [...]string{
	"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER",
	"HTTP", "GO", "PHP", "OMS", "RUST", "NODE_JS",
}

// langOther is the ordinal of OTHER, used for names Java would not know.
const langOther = 7

// LanguageCode returns the ROCKETMQ header byte of a LanguageCode name;
// "" is JAVA and an unknown name is OTHER (ok false).
func LanguageCode(name string) (b byte, ok bool) {
	switch name {
	case "JAVA", "":
		return LangJava, true
	case "GO":
		return LangGo, true
	}
	for i, n := range languageNames {
		if n == name {
			return byte(i), true
		}
	}
	return langOther, false
}

// LanguageName returns the LanguageCode name of a ROCKETMQ header byte;
// an unknown byte is "OTHER".
func LanguageName(b byte) string {
	if int(b) < len(languageNames) {
		return languageNames[b]
	}
	return languageNames[langOther]
}
