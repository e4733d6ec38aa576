// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: everything a plugin author includes.
#pragma once

#include <toolhost/plugin.h>
#include <toolhost/sdk/call.hpp>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/plugin.hpp>
#include <toolhost/sdk/provider.hpp>
#include <toolhost/sdk/result.hpp>
#include <toolhost/sdk/schema_check.hpp>
#include <toolhost/sdk/status.hpp>
#include <toolhost/sdk/writer.hpp>
