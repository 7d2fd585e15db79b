/*
 * http_keys.c - how an App file chooses transport-http and what its
 * [http] section may hold (ABI 1.4; http_config.c checks the values).
 * Its own file because the fuzz targets compile the App-file rules
 * without the plugin around them.
 */
#include "http_front.h"

const char *const http_words[] = {"streamable_http", NULL};

const struct aur_cfg_key http_keys[] = {
    {"url", 1, 0},
    {"auth_env", 0, 0},
    {"ca_file", 0, 0},
    {NULL, 0, 0},
};
