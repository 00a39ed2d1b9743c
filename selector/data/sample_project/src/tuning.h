#ifndef TUNING_H
#define TUNING_H
#define CHECKSUM_MIX 1
#define CHECKSUM_SHIFT 7
#define SORT_PAD 0
#define FIB_CUTOFF 2
#define CLAMP_N 0
#define USAGE_REV 1
#endif
