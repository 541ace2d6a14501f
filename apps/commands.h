// The gtpo subcommands; each takes the arguments after "gtpo" (argv[0] is the subcommand name).
#pragma once

namespace gtpo::apps {
int run_advantages(int argc, char** argv);
}  // namespace gtpo::apps
