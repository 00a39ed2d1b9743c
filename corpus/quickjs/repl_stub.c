/* Stands in for repl.c, which QuickJS's Makefile makes by compiling repl.js with qjsc:
 * qjs links qjsc_repl and evaluates it only when it runs interactively (no script, or
 * -i), which no benchmark of corpus/quickjs does.  Compiled by build_qjs.sh. */
#include <stdint.h>
const uint32_t qjsc_repl_size = 0;
const uint8_t qjsc_repl[1] = { 0 };
