package message

// Magic codes of stored records.
const (
	MagicCodeV1    = int32(-626843481) // 0xDAA320A7
	MagicCodeV2    = int32(-626843477) // 0xDAA320AB (read only; never written)
	BlankMagicCode = int32(-875286124) // 0xCBD43194
)

// SysFlag bits (§8.2 of the protocol reference).
const (
	SysFlagCompressed       int32 = 0x1
	SysFlagMultiTags        int32 = 0x2
	TransactionNotType      int32 = 0
	TransactionPreparedType int32 = 0x4
	TransactionCommitType   int32 = 0x8
	TransactionRollbackType int32 = 0xC
	SysFlagBornHostV6       int32 = 0x10
	SysFlagStoreHostV6      int32 = 0x20
	SysFlagNeedUnwrap       int32 = 0x40
	SysFlagInnerBatch       int32 = 0x80
	// SysFlagCompressionTypeMask covers bits 8-10: 0x100 LZ4, 0x200 ZSTD,
	// 0x300 ZLIB; 0 means ZLIB too (older producers).
	SysFlagCompressionTypeMask int32 = 0x700
)

const transactionMask int32 = 0xC

// TransactionValue returns the transaction type bits of sysFlag.
func TransactionValue(sysFlag int32) int32 { return sysFlag & transactionMask }

// ResetTransactionValue replaces the transaction type bits of sysFlag by t.
func ResetTransactionValue(sysFlag, t int32) int32 {
	return sysFlag&^transactionMask | t&transactionMask
}
