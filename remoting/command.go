package remoting

// SerializeType is the header serialization named by the high byte of the
// header-length word.
type SerializeType uint8

const (
	SerializeJSON     SerializeType = 0
	SerializeRocketMQ SerializeType = 1
)

// Flag bits of a command.
const (
	FlagResponse int32 = 1 << 0
	FlagOneway   int32 = 1 << 1
)

// Language codes (RocketMQ's LanguageCode ordinals).
const (
	LangJava   = 0
	LangCPP    = 1
	LangDotNet = 2
	LangPython = 3
	LangGo     = 9
)

// CurrentVersion is the version ordinal Spool stamps on what it sends:
// RocketMQ V5_3_3.
const CurrentVersion = 479

// Command is one remoting request or response.
type Command struct {
	Code      int32
	Language  string // LanguageCode name, e.g. "JAVA", "GO"
	Version   int32
	Opaque    int32
	Flag      int32
	Remark    string
	ExtFields map[string]string
	Body      []byte
	// Serialize is the header serialization the command arrived in, or is to
	// be written in.
	Serialize SerializeType

	// ext holds the ext fields of a command read by ReadCommandInline
	// (or filled by an ExtWriter) until ExtMap builds the map; it is
	// allocated with the command, so a plain command stays small.
	ext *extTable
}

// IsResponse reports whether the response flag bit is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the oneway flag bit is set.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// Ext returns ext field k, or "" when absent.
func (c *Command) Ext(k string) string {
	v, _ := c.LookupExt(k)
	return v
}

// SetExt sets ext field k, creating the map when needed.
func (c *Command) SetExt(k, v string) {
	c.ExtMap()
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 4)
	}
	c.ExtFields[k] = v
}

// NewRequest builds a request command with the given code and ext fields.
func NewRequest(code int32, ext map[string]string, body []byte) *Command {
	return &Command{Code: code, Language: "JAVA", Version: CurrentVersion, ExtFields: ext, Body: body}
}

// NewResponse builds a response to req with the given code and remark. It
// copies req's opaque and serialization and sets the response flag.
func NewResponse(req *Command, code int32, remark string) *Command {
	c := responseTo(req, code, remark)
	return &c
}

func responseTo(req *Command, code int32, remark string) Command {
	return Command{
		Code:      code,
		Language:  "JAVA",
		Version:   CurrentVersion,
		Opaque:    req.Opaque,
		Flag:      FlagResponse,
		Remark:    remark,
		Serialize: req.Serialize,
	}
}
