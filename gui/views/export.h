// Exporting a chart or the timeline as PNG or SVG.
#pragma once

#include <QString>

QT_BEGIN_NAMESPACE
class QWidget;
QT_END_NAMESPACE

namespace pipeprof::gui {

/// Writes the widget as it is on screen: SVG when path ends in ".svg", else PNG (at the
/// screen's device pixel ratio). Returns an empty string on success, else a message naming
/// the path.
QString exportWidget(QWidget* widget, const QString& path, const QString& title);

}  // namespace pipeprof::gui
