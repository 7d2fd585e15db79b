/*
 * aur_setup.h - included first by every core .c file.
 * Feature macros and the few headers every core file needs.
 */
#ifndef AUR_SETUP_H
#define AUR_SETUP_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1
#endif

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <aurora/aur_plugin.h>

#define AUR__ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
