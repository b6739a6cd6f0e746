/* libunwind's four entry points Debian's static glog calls to walk the stack in a fatal
 * message, each failing, so that such a trace is empty. Debian's libunwind.a is compiled for
 * fixed addresses (R_X86_64_32S relocations), which a position-independent executable, and so
 * any program linking libbreaker_client.a, cannot hold. The message itself is still logged. */

/* Fails: glog then reports no frame. */
int _Ux86_64_getcontext(void* context) {
  (void)context;
  return -1;
}

/* Fails (UNW_EUNSPEC). */
int _ULx86_64_init_local(void* cursor, void* context) {
  (void)cursor;
  (void)context;
  return -1;
}

/* Fails (UNW_EUNSPEC): glog stops at the first frame. */
int _ULx86_64_get_reg(void* cursor, int reg, void* value) {
  (void)cursor;
  (void)reg;
  (void)value;
  return -1;
}

/* Returns 0: no further frame. */
int _ULx86_64_step(void* cursor) {
  (void)cursor;
  return 0;
}
