// Exporting a chart or the timeline as PNG or SVG.
#include "views/export.h"

#include <QPainter>
#include <QPixmap>
#include <QSvgGenerator>
#include <QWidget>

namespace pipeprof::gui {

QString exportWidget(QWidget* widget, const QString& path, const QString& title) {
  if (widget == nullptr) return QObject::tr("Nothing to export in this view.");
  if (path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
    QSvgGenerator generator;
    generator.setFileName(path);
    generator.setSize(widget->size());
    generator.setViewBox(QRect(QPoint(0, 0), widget->size()));
    generator.setTitle(title);
    generator.setDescription(QObject::tr("Exported by pipeprof-gui"));
    QPainter painter;
    if (!painter.begin(&generator)) return QObject::tr("Cannot write %1: check that its folder exists and is writable.").arg(path);
    widget->render(&painter);
    painter.end();
    return {};
  }
  if (!widget->grab().save(path, "PNG")) {
    return QObject::tr("Cannot write %1: check that its folder exists and is writable.").arg(path);
  }
  return {};
}

}  // namespace pipeprof::gui
