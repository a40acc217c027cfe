; A malformed target file: the key and the reason, exit 1.
; RUN: printf '[target]\nname = "x"\n' > %t.toml
; RUN: not nnx-run %s --target %t.toml 2>&1 | FileCheck %s
; CHECK: .toml: key 'target.clock_hz': missing key
.storage 64
.text
