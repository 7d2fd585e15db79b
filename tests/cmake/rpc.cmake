# Unit suites of the JSON-RPC layer (lib/rpc/) and of protocol
# negotiation (lib/engine/negotiate.c), each against an in-process fake
# transport.  They call internal aur__* functions, so they link the static
# core (aurora-mcp-internal), never the shared library; a tree from before
# that split exported everything from the .so.
if(TARGET aurora-mcp-internal)
  set(AUR_RPC_CORE aurora-mcp-internal)
elseif(TARGET aurora-mcp)
  set(AUR_RPC_CORE aurora-mcp)
endif()
if(AUR_RPC_CORE)
  aur_add_check(check_rpc SOURCES lib/rpc/check_rpc.c lib/rpc/check_rpc_end.c
                lib/rpc/check_rpc_close.c lib/rpc/check_rpc_text.c
                lib/rpc/check_rpc_fake.c
                LIBS ${AUR_RPC_CORE} TIMEOUT 120)
  # The dispatch workers every connection shares (lib/rpc/rpc_pool.c),
  # with a fake transport of its own: many connections at once.
  aur_add_check(check_rpc_pool SOURCES lib/rpc/check_rpc_pool.c
                LIBS ${AUR_RPC_CORE} TIMEOUT 120)
  aur_add_check(check_negotiate SOURCES lib/engine/check_negotiate.c
                lib/engine/check_negotiate_fail.c
                lib/engine/check_negotiate_fake.c
                LIBS ${AUR_RPC_CORE} TIMEOUT 120)
endif()
