/* guard_main.c: zbso-guard, the guard process of power.h (pw_guard_main): started by libzbso
 * and zbso run, never by hand. */
#include "power/power.h"

int main(int argc, char **argv)
{
    return pw_guard_main(argc, argv);
}
